import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a running `npm start` leaves in its data folder so that the CLIs (`create-account --local`,
 * `replay-dlq --local`) can reach it: one file per instance, `runtime-<port>.json`, so that several
 * instances on one folder (different ports, or in memory) never overwrite each other's.
 */
export interface RuntimeFile {
  base_url: string;
  port: number;
  pid: number;
  /** RFC 3339 UTC. */
  started_at: string;
  in_memory: boolean;
  /** The variables a CLI sets to reach the instance's engines: endpoints, region, tables, queue URLs. */
  env: Record<string, string>;
}

/** A runtime file found in a data folder, with its path. */
export type FoundRuntime = RuntimeFile & { file: string };

// `runtime.json` is the name before one file per instance: still read (and cleaned when stale).
const RUNTIME_FILE = /^runtime(-\d+)?\.json$/;

/** The file of the instance listening on `port`. */
export const runtimeFilePath = (dataDir: string, port: number) => join(dataDir, `runtime-${port}.json`);

/** Writes the instance's file; returns its path. */
export const writeRuntimeFile = (dataDir: string, runtime: RuntimeFile) => {
  mkdirSync(dataDir, { recursive: true });
  const file = runtimeFilePath(dataDir, runtime.port);
  writeFileSync(file, `${JSON.stringify(runtime, null, 2)}\n`, { mode: 0o600 });
  return file;
};

/** Whether a process with this id exists (EPERM: it does, under another user). */
export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const readRuntime = (file: string): RuntimeFile | undefined => {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<RuntimeFile>;
    if (typeof parsed.pid !== 'number' || typeof parsed.base_url !== 'string' || typeof parsed.env !== 'object') return undefined;
    return { ...parsed, port: parsed.port ?? Number(new URL(parsed.base_url).port) } as RuntimeFile;
  } catch {
    return undefined; // half-written or not ours: treated as stale
  }
};

/**
 * The instances running on a data folder, by port. Files of processes that are gone (a crash, a
 * `kill -9`) and unreadable files are deleted on the way.
 */
export const liveRuntimes = (dataDir: string): FoundRuntime[] => {
  let names: string[];
  try {
    names = readdirSync(dataDir).filter((name) => RUNTIME_FILE.test(name));
  } catch {
    return [];
  }
  const live: FoundRuntime[] = [];
  for (const name of names) {
    const file = join(dataDir, name);
    const runtime = readRuntime(file);
    if (runtime && isAlive(runtime.pid)) live.push({ ...runtime, file });
    else rmSync(file, { force: true });
  }
  return live.sort((a, b) => a.port - b.port);
};

/**
 * The one running instance a CLI should talk to: the one on `port` when given, else the only one
 * on the data folder.
 *
 * @throws Error naming the data folder and, when several run there, each one's port and pid
 */
export const findRuntime = (dataDir: string, port?: number): FoundRuntime => {
  const live = liveRuntimes(dataDir);
  const list = live.map((r) => `${r.port} (pid ${r.pid}${r.in_memory ? ', in memory' : ''})`).join(', ');
  if (port !== undefined) {
    const found = live.find((r) => r.port === port);
    if (found) return found;
    throw new Error(
      live.length
        ? `no local runtime on port ${port} uses ${dataDir}; running there: ${list}.`
        : `no local runtime is running on ${dataDir}: start one (npm start), or pass --data-dir.`,
    );
  }
  if (live.length === 1) return live[0];
  if (!live.length) throw new Error(`no local runtime is running on ${dataDir}: start one (npm start), or pass --data-dir.`);
  throw new Error(`${live.length} local runtimes use ${dataDir}: ports ${list}. Say which with --port <port>.`);
};
