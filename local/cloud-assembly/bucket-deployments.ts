import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { resourcesOfType, targetOf, type AssemblyStack } from './template';

/**
 * What the template's BucketDeployments (Custom::CDKBucketDeployment) put into each bucket at
 * deploy, written into a folder per bucket: each source asset's files, filtered by the deployment's
 * Exclude and Include as `aws s3 sync` filters them, under its DestinationKeyPrefix, with the
 * SourceMarkers (the stack's values CDK could not know at synth: the API's address, the user pool)
 * replaced by what they resolve to here. The console's files and `config.json` are so exactly what
 * a deploy writes; only the objects' metadata (cache-control, content-type) is not kept.
 */

/** The folder of a source asset (`<hash>.zip` in the asset bucket) in the cloud assembly. */
const assetDirOf = (stack: AssemblyStack, objectKey: string): string | undefined => {
  const manifest = JSON.parse(readFileSync(join(stack.dir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; properties?: { file?: string } }>;
  };
  const assetsFile = Object.values(manifest.artifacts).find((a) => a.type === 'cdk:asset-manifest' && a.properties?.file?.startsWith(`${stack.name}.`))
    ?.properties?.file;
  if (assetsFile && existsSync(join(stack.dir, assetsFile))) {
    const { files } = JSON.parse(readFileSync(join(stack.dir, assetsFile), 'utf8')) as {
      files: Record<string, { source: { path: string }; destinations: Record<string, { objectKey: string }> }>;
    };
    const found = Object.values(files).find((f) => Object.values(f.destinations).some((d) => d.objectKey === objectKey));
    if (found) return join(stack.dir, found.source.path);
  }
  // CDK's layout when the asset manifest is not beside the template: `<hash>.zip` is the folder `asset.<hash>`.
  const conventional = join(stack.dir, `asset.${objectKey.replace(/\.zip$/, '')}`);
  return existsSync(conventional) ? conventional : undefined;
};

/** `aws s3 sync`'s filter: `*` matches any characters, `/` included; `?` one. */
const globOf = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

/** Whether a file is copied: every file is, unless a filter says otherwise; the last filter that matches decides. */
const included = (key: string, exclude: string[], include: string[]) => {
  let keep = true;
  for (const [patterns, verdict] of [
    [exclude, false],
    [include, true],
  ] as const) {
    if (patterns.some((p) => globOf(p).test(key))) keep = verdict;
  }
  return keep;
};

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });

/**
 * Writes each bucket's deployed objects into `outDir/<bucket logical ID>/` (emptied first) and
 * returns those folders by bucket.
 * @throws Error for a source the runtime cannot read (not a folder of the assembly) or a marker it cannot resolve
 */
export const deployBuckets = (stack: AssemblyStack, resolve: (value: unknown) => any, outDir: string): Map<string, string> => {
  const buckets = new Map<string, string>();
  for (const [id, deployment] of resourcesOfType(stack.template, 'Custom::CDKBucketDeployment')) {
    const props = deployment.Properties ?? {};
    const bucketId = targetOf(props.DestinationBucketName);
    if (!bucketId) throw new Error(`Bucket deployment ${id}: its destination is not a bucket of the template.`);
    let bucketDir = buckets.get(bucketId);
    if (!bucketDir) {
      bucketDir = join(outDir, bucketId);
      rmSync(bucketDir, { recursive: true, force: true });
      mkdirSync(bucketDir, { recursive: true });
      buckets.set(bucketId, bucketDir);
    }
    const prefix = String(props.DestinationKeyPrefix ?? '').replace(/^\/+/, '');
    const keys = (props.SourceObjectKeys ?? []) as string[];
    keys.forEach((objectKey, i) => {
      const source = assetDirOf(stack, objectKey);
      if (!source || !statSync(source).isDirectory()) throw new Error(`Bucket deployment ${id}: source ${objectKey} is not a folder of the cloud assembly.`);
      const markers = Object.entries((resolve(props.SourceMarkers?.[i] ?? {}) ?? {}) as Record<string, unknown>);
      const jsonEscape = props.SourceMarkersConfig?.[i]?.jsonEscape === true;
      for (const file of filesUnder(source)) {
        const key = relative(source, file).split('\\').join('/');
        if (!included(key, props.Exclude ?? [], props.Include ?? [])) continue;
        const target = join(bucketDir!, prefix, key);
        mkdirSync(dirname(target), { recursive: true });
        if (!markers.length) {
          cpSync(file, target);
          continue;
        }
        // As the deployment's function: each marker replaced in every file (escaped for JSON when asked).
        let text = readFileSync(file, 'utf8');
        for (const [marker, value] of markers) text = text.replaceAll(marker, jsonEscape ? JSON.stringify(String(value)).slice(1, -1) : String(value));
        writeFileSync(target, text);
      }
    });
  }
  return buckets;
};
