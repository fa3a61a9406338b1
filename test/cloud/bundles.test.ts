// The bundles of the run's cloud assembly, which `cdk synth` wrote as `cdk deploy` uploads them
// (test/helpers/cloud-assembly-setup.ts): one per function, each the ES module that
// HANDLER_ESBUILD_OPTIONS builds from its handler's entry, which loads in a folder holding nothing
// but the AWS SDK, as on Lambda.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HANDLER_ESBUILD_OPTIONS, handlerEntry, LAMBDAS_DIR } from '../../lib/constructs/handler-function';
import { readAssembly, resourcesOfType, targetOf } from '../../local/cloud-assembly/template';
import { cloudAssemblyDir } from '../helpers/runtime';

const PROJECT_ROOT = join(import.meta.dirname, '../..');
const HANDLER_OF_SOURCE = /(?:^|\/)lambdas\/handlers\/([^/]+)\/handler\.ts$/;

interface Bundle {
  /** The function's logical ID. */
  id: string;
  /** Its bundle's folder in the assembly. */
  dir: string;
  /** The handler folders whose entry its source map names (one, for a sound bundle). */
  handlers: string[];
}

/** The app's functions (all but CDK's BucketDeployment, which only runs during a deploy) and their bundles. */
const bundlesOf = (assemblyDir: string): Bundle[] => {
  const { template } = readAssembly(assemblyDir);
  const deployOnly = new Set(resourcesOfType(template, 'Custom::CDKBucketDeployment').map(([, r]) => targetOf(r.Properties?.ServiceToken)));
  return resourcesOfType(template, 'AWS::Lambda::Function')
    .filter(([id]) => !deployOnly.has(id))
    .map(([id, fn]) => {
      const dir = join(assemblyDir, String(fn.Metadata?.['aws:asset:path']));
      const { sources } = JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as { sources: string[] };
      return { id, dir, handlers: sources.flatMap((source) => HANDLER_OF_SOURCE.exec(source)?.[1] ?? []) };
    });
};

let bundles: Bundle[];
beforeAll(() => {
  bundles = bundlesOf(cloudAssemblyDir()!);
});

describe('the bundles cdk deploy uploads', () => {
  it('are one per handler folder, each bundling that handler’s entry alone, with its source map', () => {
    expect(bundles.map((b) => [b.id, b.handlers.length])).toEqual(bundles.map((b) => [b.id, 1]));
    expect(bundles.map((b) => b.handlers[0]).sort()).toEqual(readdirSync(LAMBDAS_DIR).sort());
  });

  it('are exactly what HANDLER_ESBUILD_OPTIONS builds from each entry, so the benchmarks measure what is deployed', async () => {
    // One esbuild run for every entry: without code splitting, each entry's output is the file a
    // build of it alone writes (compared byte for byte for every handler when this test was written).
    const built = await build({
      ...HANDLER_ESBUILD_OPTIONS,
      entryPoints: Object.fromEntries(bundles.map((b) => [`${b.handlers[0]}/index`, handlerEntry(b.handlers[0])])),
      outdir: join(tmpdir(), 'fleetstream-bundles'),
      outExtension: { '.js': '.mjs' },
      write: false,
    });
    const code = (handler: string) => built.outputFiles.find((file) => file.path.endsWith(`/${handler}/index.mjs`))?.text;

    const differing = bundles.filter((bundle) => code(bundle.handlers[0]) !== readFileSync(join(bundle.dir, 'index.mjs'), 'utf8')).map((b) => b.id);

    expect(differing).toEqual([]);
  }, 120_000);

  it('each load with only the AWS SDK beside them, as on Lambda, and export their handler', () => {
    // Each bundle copied into a folder of its own whose node_modules holds the SDK alone (Lambda's
    // runtime provides it), then all imported by one Node.js process.
    const scratch = mkdtempSync(join(tmpdir(), 'fleetstream-bundle-load-'));
    try {
      const files = bundles.map((bundle) => {
        const dir = join(scratch, bundle.id);
        mkdirSync(join(dir, 'node_modules'), { recursive: true });
        symlinkSync(join(PROJECT_ROOT, 'node_modules', '@aws-sdk'), join(dir, 'node_modules', '@aws-sdk'), 'dir');
        copyFileSync(join(bundle.dir, 'index.mjs'), join(dir, 'index.mjs'));
        return join(dir, 'index.mjs');
      });
      const exported = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          // The Lambda runtime defines the awslambda global, which streamed handlers call as they load.
          `globalThis.awslambda = { streamifyResponse: (h) => h };
             const kinds = [];
             for (const file of process.argv.slice(1)) kinds.push(typeof (await import(file)).handler);
             process.stdout.write(JSON.stringify(kinds));`,
          ...files,
        ],
        { encoding: 'utf8', env: { ...process.env, AWS_REGION: 'us-east-1' } },
      );

      expect(JSON.parse(exported)).toEqual(bundles.map(() => 'function'));
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
