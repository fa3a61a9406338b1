import { join } from 'node:path';
import type { LocalCognito } from '../cognito-local';
import { LOCAL_AWS_ENV } from '../dynamodb-local';
import { bootstrap, ensureFirstUser } from '../runtime';
import type { Localize } from './localize';
import type { RunContext } from './run-context';
import { resourcesOfType } from './template';

/** What a deploy prints (the outputs), and the queues and buckets they name, by the source runtime's names for them. */
export interface StackOutputs {
  outputs: Record<string, string>;
  queue_urls: Record<string, string>;
  buckets: Record<string, string>;
}

/** The stack's outputs as they work here, and the queues' URLs and buckets' names they give. */
export const stackOutputs = ({ template, resolve }: RunContext, localize: Localize): StackOutputs => {
  const outputs: Record<string, string> = {};
  for (const [name, output] of Object.entries(template.Outputs ?? {})) {
    try {
      outputs[name] = localize(String(resolve(output.Value)));
    } catch {
      // an output naming something that does not run here (a dashboard): not needed locally
    }
  }
  const queue_urls: Record<string, string> = {};
  for (const [name, url] of Object.entries(outputs)) {
    const match = /^(\w+?)(Queue|Dlq)Url$/.exec(name);
    // RegistryStreamDlqUrl names the queue the source runtime calls registry-stream-dlq.
    if (match) queue_urls[`${match[1].replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}${match[2] === 'Dlq' ? '-dlq' : ''}`] = url;
  }
  // FirmwareBucketName names the bucket the source runtime calls `firmware`.
  const buckets = Object.fromEntries(
    Object.entries(outputs).flatMap(([name, value]) => {
      const match = /^(\w+)BucketName$/.exec(name);
      return match ? [[`${match[1].charAt(0).toLowerCase()}${match[1].slice(1)}`, value]] : [];
    }),
  );
  return { outputs, queue_urls, buckets };
};

/**
 * Points the host's environment at the engines, so that the test helpers and CLIs reach them as
 * the source runtime lets them. Returns the registry table's name.
 */
export const exportEngines = ({ template, engines, physical }: RunContext, outputs: Record<string, string>, queue_urls: Record<string, string>): string => {
  const registryTable = outputs.RegistryTableName;
  const timeseriesTable = resourcesOfType(template, 'AWS::DynamoDB::Table')
    .map(([tid]) => physical.get(tid)!.ref)
    .find((n) => n !== registryTable);
  // The workspaces' default limits the template gives its functions, for the operator's command.
  const limitDefaults = resourcesOfType(template, 'AWS::Lambda::Function')
    .map(([, fn]) => (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.WORKSPACE_LIMIT_DEFAULTS)
    .find((value): value is string => typeof value === 'string');
  Object.assign(process.env, LOCAL_AWS_ENV, {
    ...(limitDefaults ? { WORKSPACE_LIMIT_DEFAULTS: limitDefaults } : {}),
    AWS_ENDPOINT_URL_DYNAMODB: engines.dynamo.endpoint,
    AWS_ENDPOINT_URL_SQS: engines.sqs.address,
    AWS_ENDPOINT_URL_S3: engines.s3.endpoint,
    AWS_ENDPOINT_URL_SESV2: engines.ses.endpoint,
    REGISTRY_TABLE: registryTable,
    ...(timeseriesTable ? { TIMESERIES_TABLE: timeseriesTable } : {}),
    ...(queue_urls.ingest ? { INGEST_QUEUE_URL: queue_urls.ingest } : {}),
    ...(queue_urls.forward ? { FORWARD_QUEUE_URL: queue_urls.forward } : {}),
  });
  return registryTable;
};

/** Creates the bootstrap account and, with a user pool, the first console user, a member of it (as npm start's), as the host makes them. */
export const bootstrapAccount = async ({ options, log, dataDir }: RunContext, cognito: LocalCognito | undefined, registryTable: string) => {
  log('creating the bootstrap account…');
  const account = await bootstrap(dataDir, options.devApiKey, registryTable);
  // The first console user, a member of the bootstrap account (as npm start's), made by the host as the account is.
  const firstUser =
    cognito && (await ensureFirstUser(cognito, account.account_id, options.firstUser ?? {}, dataDir && join(dataDir, 'cognito'), registryTable));
  return { account, firstUser };
};
