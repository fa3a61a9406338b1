/**
 * The API in a process of its own, for benchmarks that weigh its memory: the child runs the local
 * runtime (in memory) and answers `gc` and `stop`; the parent reads the child's RSS from /proc and
 * times HTTP GETs against it. Used by bench:query and bench:lists.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { LOCAL_AWS_ENV } from '../local/dynamodb-local';

const SAMPLE_MS = 10;

/** The child's side: answers the parent's `gc` and `stop`, then says it is ready with `ready`. */
export const serveUntilStopped = (runtime: { stop: () => Promise<void> }, ready: object) => {
  process.on('message', async (message) => {
    if (message === 'gc') {
      (globalThis as { gc?: () => void }).gc?.();
      process.send!('gc-done');
    }
    if (message === 'stop') {
      await runtime.stop();
      process.exit(0);
    }
  });
  process.send!({ ready });
};

/**
 * The parent's side: forks `moduleUrl` with `--serve` (and V8's old space capped at `heapMb`), and
 * waits for its `ready`.
 */
export const startServingProcess = async <R>(moduleUrl: string, heapMb?: number) => {
  Object.assign(process.env, LOCAL_AWS_ENV);
  const child: ChildProcess = fork(fileURLToPath(moduleUrl), ['--serve'], {
    execArgv: ['--expose-gc', '--import', 'tsx', ...(heapMb ? [`--max-old-space-size=${heapMb}`] : [])],
    env: { ...process.env, ...LOCAL_AWS_ENV },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ready = await new Promise<R>((resolve, reject) => {
    child.on('message', (message: { ready?: R }) => message.ready && resolve(message.ready));
    child.once('exit', (code) => reject(new Error(`the serving process exited (${code}) before it was ready`)));
  });
  return {
    ready,
    pid: child.pid!,
    /** A full GC in the child, done when it answers. */
    gc: () =>
      new Promise<void>((resolve) => {
        child.once('message', () => resolve());
        child.send('gc');
      }),
    /** Sends a benchmark's own `message` (its serve() answers it) and resolves with the child's next message. */
    ask: <T>(message: string) =>
      new Promise<T>((resolve) => {
        child.once('message', (answer) => resolve(answer as T));
        child.send(message);
      }),
    stop: async () => {
      child.send('stop');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
};

/** A process's resident set (`VmRSS`) or its peak (`VmHWM`), in bytes, from /proc. */
export const rssOf = (pid: number, field: 'VmRSS' | 'VmHWM') => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? NaN) * 1024;
};

export const mb = (bytes: number) => bytes / 1024 / 1024;

/**
 * Watches `pid`'s peak RSS from now: clears its VmHWM (writing 5 to clear_refs, Linux ≥ 4.0) and
 * samples VmRSS every 10 ms to back it up; `peak()` stops watching and gives the peak.
 */
export const watchPeakRss = (pid: number) => {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  let peak = rssOf(pid, 'VmRSS');
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid, 'VmRSS'))), SAMPLE_MS);
  return {
    peak: () => {
      clearInterval(sampler);
      return Math.max(peak, rssOf(pid, 'VmHWM'));
    },
  };
};

/**
 * One GET with the API key, gunzipped when `gzip` asked for it: the time to the first body byte
 * (by `elapsed`, the caller's clock), the bytes on the wire and the body's text.
 * @throws when the answer is not a 200.
 */
export const getText = (url: string, apiKey: string, gzip: boolean, elapsed: () => number) =>
  new Promise<{ ttfbMs: number; bytes: number; text: string }>((resolve, reject) => {
    request(url, { headers: { 'x-api-key': apiKey, ...(gzip ? { 'accept-encoding': 'gzip' } : {}) } }, (res) => {
      let ttfbMs = 0;
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.once('data', () => (ttfbMs = elapsed()));
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      const body = gzip ? res.pipe(createGunzip()) : res;
      body.on('data', (chunk: Buffer) => chunks.push(chunk));
      body.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}: ${text}`));
        resolve({ ttfbMs, bytes, text });
      });
      body.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
