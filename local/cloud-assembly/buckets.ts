import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConsoleConfig } from '../../console/src/lib/config';
import type { CorsRule } from '../s3-engine';
import { deployBuckets } from './bucket-deployments';
import type { Localize } from './localize';
import { CONSOLE_DOMAIN, type RunContext } from './run-context';
import { resourcesOfType } from './template';

/**
 * Creates the buckets as declared: named by BucketName or as CloudFormation names them (lower case),
 * with their CORS rules, the console's distribution standing for the console served here.
 */
export const createBuckets = async (
  { stack, template, region, engines, physical, resolve }: RunContext,
  { port, localApiUrl }: { port: number; localApiUrl: string },
): Promise<void> => {
  for (const [id, bucket] of resourcesOfType(template, 'AWS::S3::Bucket')) {
    const props = bucket.Properties ?? {};
    const name =
      typeof props.BucketName === 'string'
        ? props.BucketName
        : `${stack.name}-${id}`
            .toLowerCase()
            .replace(/[^a-z0-9.-]/g, '-')
            .slice(0, 63);
    physical.set(id, {
      ref: name,
      attributes: {
        Arn: `arn:aws:s3:::${name}`,
        DomainName: `${name}.s3.amazonaws.com`,
        RegionalDomainName: `${name}.s3.${region}.amazonaws.com`,
        DualStackDomainName: `${name}.s3.dualstack.${region}.amazonaws.com`,
      },
    });
    const rules = ((resolve(props.CorsConfiguration?.CorsRules ?? []) ?? []) as Array<Record<string, any>>).map(
      (rule): CorsRule => ({
        allowedOrigins: (rule.AllowedOrigins ?? []).flatMap((o: string) =>
          o === `https://${CONSOLE_DOMAIN}` ? [localApiUrl, `http://localhost:${port}`] : [o],
        ),
        allowedMethods: rule.AllowedMethods ?? [],
        allowedHeaders: (rule.AllowedHeaders ?? []).map((h: string) => h.toLowerCase()),
        exposedHeaders: rule.ExposedHeaders ?? [],
        ...(rule.MaxAge !== undefined ? { maxAgeSeconds: Number(rule.MaxAge) } : {}),
      }),
    );
    await engines.s3.createBucket(name, rules);
  }
};

/** The console as the template deploys it, when it does: the folder of its files, and its config.json. */
export interface ConsoleDeployment {
  consoleBucket: string | undefined;
  consoleConfig: ConsoleConfig | undefined;
}

/**
 * The console as the template deploys it: the BucketDeployments' files of the bucket that receives
 * config.json (or a test's folder), and that config.json, its markers resolved.
 */
export const deployConsole = ({ options, log, stops, stack, dataDir, resolve }: RunContext, localize: Localize): ConsoleDeployment => {
  const bucketsDir = dataDir ? join(dataDir, 'buckets') : mkdtempSync(join(tmpdir(), 'fleetstream-buckets-'));
  if (!dataDir) stops.push(async () => rmSync(bucketsDir, { recursive: true, force: true }));
  const consoleBucket = [...deployBuckets(stack, resolve, bucketsDir).values()].find((d) => existsSync(join(d, 'config.json')));
  const consoleConfig =
    consoleBucket === undefined ? undefined : (JSON.parse(localize(readFileSync(join(consoleBucket, 'config.json'), 'utf8'))) as ConsoleConfig);
  if (consoleBucket)
    log(`serving the console from the template's bucket deployments${options.consoleDistDir ? ` (its files from ${options.consoleDistDir})` : ''}`);
  return { consoleBucket, consoleConfig };
};
