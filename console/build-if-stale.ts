/**
 * `npm start`'s prestart: builds the console (console/dist) when it is missing or older than its
 * sources, so a fresh clone serves a console at `/` without a separate step, and an unchanged one
 * starts without rebuilding.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const built = join(root, 'dist', 'index.html');

/** The newest modification time under a folder (or of a file). */
const newest = (path: string): number => {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
};

const sources = Math.max(newest(join(root, 'src')), newest(join(root, 'index.html')), newest(join(root, 'vite.config.ts')));
if (!existsSync(built) || statSync(built).mtimeMs < sources) {
  process.stderr.write('fleetstream: building the console (console/dist)…\n');
  const vite = join(root, '..', 'node_modules', 'vite', 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', root, '--logLevel', 'warn'], { stdio: 'inherit' });
  // a failed build leaves the API usable: npm start still starts, and `/` says the console is not built
  if (result.status !== 0) process.stderr.write('fleetstream: the console did not build (see above); the API still starts.\n');
}
