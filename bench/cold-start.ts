/**
 * Cold-start cost of each bundled handler: bundle size (minified, bundled exactly as the stack
 * bundles it) and the time to import it in a fresh Node process, side by side with a bare
 * `node -e 0` start in the same run. Targets: bundle ≤ 500 KB, import overhead ≤ 150 ms.
 *
 *   npm run bench:cold-start
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HANDLER_ESBUILD_OPTIONS, LAMBDAS_DIR, handlerEntry } from '../lib/constructs/handler-function';
import { median, printTable } from './stats';

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const OUT = join(process.cwd(), '.bench', 'bundles'); // inside the project: @aws-sdk/* resolves from node_modules, as the runtime's copy would

const handlers = readdirSync(LAMBDAS_DIR).filter((name) => existsSync(join(LAMBDAS_DIR, name, 'handler.ts')));

// The Lambda Node.js runtime defines the `awslambda` global before a handler loads; streaming
// handlers call `awslambda.streamifyResponse` at import. A stand-in, as cheap as the runtime's.
const RUNTIME_GLOBAL = 'globalThis.awslambda = { streamifyResponse: (handler) => handler, HttpResponseStream: { from: (stream) => stream } };';

/** Wall time of one fresh `node …` process, in ms. */
const run = (args: string[]) => {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'SILENT' } });
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} failed: ${result.stderr}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
};

const main = async () => {
  console.log(`bundling ${handlers.length} handlers with the stack's esbuild options…`);
  const bundles = new Map<string, { file: string; bytes: number }>();
  for (const name of handlers) {
    const dir = join(OUT, name);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'index.mjs');
    await build({ ...HANDLER_ESBUILD_OPTIONS, entryPoints: [handlerEntry(name)], outfile: file, logLevel: 'error' });
    bundles.set(name, { file, bytes: statSync(file).size });
  }

  console.log(`timing ${ROUNDS} rounds of fresh processes (bare start, then each import)…`);
  const bare: number[] = [];
  const imports = new Map<string, number[]>(handlers.map((h) => [h, []]));
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(run(['-e', '0']));
    for (const [name, { file }] of bundles) {
      imports.get(name)!.push(run(['--input-type=module', '-e', `${RUNTIME_GLOBAL} await import(${JSON.stringify(pathToFileURL(file).href)})`]));
    }
    process.stderr.write('.');
  }
  process.stderr.write('\n');

  const bareMs = median(bare);
  const rows = handlers.map((name) => {
    const ms = median(imports.get(name)!);
    const kb = bundles.get(name)!.bytes / 1024;
    const overhead = ms - bareMs;
    return {
      handler: name,
      'bundle KB': kb,
      'import ms': ms,
      'overhead ms': overhead,
      'ratio to bare': ms / bareMs,
      target: kb <= 500 && overhead <= 150 ? 'ok' : 'MISSED',
    };
  });
  printTable(`cold start (median of ${ROUNDS}; bare \`node -e 0\` = ${bareMs.toFixed(1)} ms)`, rows);
};

await main();
