import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ROUTES } from '../../lambdas/routes';
import type { LocalRuntime } from '../../local/runtime';
import { fleetstreamArgs } from '../helpers/cli';
import { startRuntime } from '../helpers/runtime';

const run = promisify(execFile);
const smoke = (url: string, key: string) =>
  run(process.execPath, fleetstreamArgs('smoke', ['--url', url, '--key', key, '--timeout-seconds', '30']), { env: process.env }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

let runtime: LocalRuntime;
beforeAll(async () => {
  runtime = await startRuntime();
});
afterAll(async () => {
  await runtime?.stop();
});

describe('npm run smoke', () => {
  it('calls every route of the table and finds each answering as expected', async () => {
    const { code, stdout, stderr } = await smoke(runtime.base_url, runtime.api_key);

    expect(JSON.parse(stdout)).toEqual({ base_url: runtime.base_url, routes: ROUTES.length, called: ROUTES.length, failures: [] });
    expect(stderr).toMatch(/ok {3}queryTimeseries .*the published point came back/);
    expect(code).toBe(0);
    // A command of its own process calling every route in turn (71, each Lambda started cold on the
    // template): a bound a loaded machine meets.
  }, 360_000);

  it('fails, naming the calls, with a key that is not valid', async () => {
    const { code, stderr } = await smoke(runtime.base_url, 'fsk_not-a-key');

    expect(code).toBe(1);
    expect(stderr).toMatch(/FAIL listWorkspaces GET \/workspaces → 401/);
  });
});
