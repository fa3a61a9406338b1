import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { deployBuckets } from '../../../../local/cloud-assembly/bucket-deployments';
import type { AssemblyStack, CfnResource } from '../../../../local/cloud-assembly/template';

const filesIn = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();

/** A cloud assembly folder with a built site (`asset.site`) and a config asset (`asset.config`), and no asset manifest. */
const assembly = (deployments: Record<string, CfnResource['Properties']>): AssemblyStack => {
  const dir = mkdtempSync(join(tmpdir(), 'bucket-deployments-'));
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ artifacts: {} }));
  for (const [file, text] of Object.entries({ 'index.html': '<html>', 'assets/app-1.js': 'js', 'assets/app-1.css': 'css', 'robots.txt': 'r' })) {
    mkdirSync(join(dir, 'asset.site', file, '..'), { recursive: true });
    writeFileSync(join(dir, 'asset.site', file), text);
  }
  mkdirSync(join(dir, 'asset.config'));
  writeFileSync(join(dir, 'asset.config', 'config.json'), '{"apiUrl":"https://<<marker:0xbaba:0>>/v3","userPoolId":"<<marker:0xbaba:1>>"}');
  const Resources = Object.fromEntries(
    Object.entries(deployments).map(([id, props]) => [
      id,
      { Type: 'Custom::CDKBucketDeployment', Properties: { DestinationBucketName: { Ref: 'Bucket' }, ...props } },
    ]),
  );
  return { name: 'Stack', dir, template: { Resources } };
};
const resolve = (value: unknown): any =>
  JSON.parse(
    JSON.stringify(value ?? null)
      .replace(/\{"Ref":"Api"\}/g, '"api.local"')
      .replace(/\{"Ref":"Pool"\}/g, '"local_pool\\"1"'),
  );

describe('deployBuckets', () => {
  it('copies each deployment’s files as `aws s3 sync` filters them, and replaces the markers, JSON-escaped when asked', () => {
    const stack = assembly({
      Hashed: { SourceObjectKeys: ['site.zip'], Exclude: ['*'], Include: ['assets/*'] },
      Pages: { SourceObjectKeys: ['site.zip'], Exclude: ['assets/*', 'config.json'] },
      Config: {
        SourceObjectKeys: ['config.zip'],
        SourceMarkers: [{ '<<marker:0xbaba:0>>': { Ref: 'Api' }, '<<marker:0xbaba:1>>': { Ref: 'Pool' } }],
        SourceMarkersConfig: [{ jsonEscape: true }],
      },
    });
    const out = mkdtempSync(join(tmpdir(), 'buckets-'));

    const buckets = deployBuckets(stack, resolve, out);

    const bucket = buckets.get('Bucket')!;
    expect(filesIn(bucket)).toEqual(['assets/app-1.css', 'assets/app-1.js', 'config.json', 'index.html', 'robots.txt']);
    expect(JSON.parse(readFileSync(join(bucket, 'config.json'), 'utf8'))).toEqual({ apiUrl: 'https://api.local/v3', userPoolId: 'local_pool"1' });
  });

  it('puts files under the destination prefix, and keeps only what the last matching filter includes', () => {
    const stack = assembly({ Only: { SourceObjectKeys: ['site.zip'], DestinationKeyPrefix: 'web/', Exclude: ['*'], Include: ['*.html'] } });
    const out = mkdtempSync(join(tmpdir(), 'buckets-'));

    expect(filesIn(deployBuckets(stack, resolve, out).get('Bucket')!)).toEqual(['web/index.html']);
  });

  it('refuses a source that is not a folder of the assembly', () => {
    const stack = assembly({ Missing: { SourceObjectKeys: ['elsewhere.zip'] } });

    expect(() => deployBuckets(stack, resolve, mkdtempSync(join(tmpdir(), 'buckets-')))).toThrow(
      /Bucket deployment Missing: source elsewhere.zip is not a folder of the cloud assembly/,
    );
  });
});
