import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findRuntime, liveRuntimes, runtimeFilePath, writeRuntimeFile, type RuntimeFile } from '../../../local/runtime-file';

/** The pid of a process that has exited (its file is stale). */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

const runtimeOn = (port: number, pid = process.pid): RuntimeFile => ({
  base_url: `http://127.0.0.1:${port}/v3`,
  port,
  pid,
  started_at: new Date().toISOString(),
  in_memory: false,
  env: { AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${port + 1}` },
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetstream-runtime-file-'));
});

describe('runtime files', () => {
  it('keeps one file per port, so two instances on one folder do not overwrite each other', () => {
    writeRuntimeFile(dir, runtimeOn(3000));
    writeRuntimeFile(dir, runtimeOn(3001));

    expect(liveRuntimes(dir).map((r) => r.port)).toEqual([3000, 3001]);
    expect(findRuntime(dir, 3001).env.AWS_ENDPOINT_URL_SQS).toBe('http://127.0.0.1:3002');
  });

  it('picks the only running instance without --port', () => {
    writeRuntimeFile(dir, runtimeOn(3000));

    expect(findRuntime(dir).base_url).toBe('http://127.0.0.1:3000/v3');
  });

  it('names every running instance when the choice is ambiguous', () => {
    writeRuntimeFile(dir, runtimeOn(3000));
    writeRuntimeFile(dir, runtimeOn(3001));

    expect(() => findRuntime(dir)).toThrow(
      `2 local runtimes use ${dir}: ports 3000 (pid ${process.pid}), 3001 (pid ${process.pid}). Say which with --port <port>.`,
    );
    expect(() => findRuntime(dir, 4000)).toThrow(/no local runtime on port 4000 .*running there: 3000 .*, 3001/);
  });

  it('ignores and deletes the files of processes that are gone, the old runtime.json and unreadable files included', () => {
    writeRuntimeFile(dir, runtimeOn(3000));
    writeRuntimeFile(dir, runtimeOn(3001, deadPid()));
    writeFileSync(join(dir, 'runtime.json'), JSON.stringify({ ...runtimeOn(3002, deadPid()), port: undefined }));
    writeFileSync(join(dir, 'runtime-3003.json'), '{"half');

    expect(findRuntime(dir).port).toBe(3000);
    expect([3001, 3003].map((port) => existsSync(runtimeFilePath(dir, port)))).toEqual([false, false]);
    expect(existsSync(join(dir, 'runtime.json'))).toBe(false);
  });

  it('says how to start one when none runs', () => {
    expect(() => findRuntime(join(dir, 'missing'))).toThrow(/no local runtime is running on .*missing: start one \(npm start\)/);
  });
});
