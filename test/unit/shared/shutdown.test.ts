import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { onShutdown, shutDown, SHUTDOWN_EXTENSION_NAME } from '../../../lambdas/shared/shutdown';

const SHUTDOWN_MODULE = fileURLToPath(new URL('../../../lambdas/shared/shutdown.ts', import.meta.url));

describe('shutDown', () => {
  it('runs every hook at once and waits for them, whatever one of them throws', async () => {
    const ran: string[] = [];
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    onShutdown(async () => {
      await slow;
      ran.push('slow');
    });
    onShutdown(async () => {
      ran.push('fast');
      release();
    });
    onShutdown(() => Promise.reject(new Error('the table is gone')));

    await shutDown(5_000);

    expect(ran).toEqual(['fast', 'slow']);
  });

  it('gives up on hooks still running when its budget is spent', async () => {
    onShutdown(() => new Promise(() => undefined));

    // Without the budget this would wait for ever (and the test time out).
    await expect(shutDown(50)).resolves.toBeUndefined();
  });
});

/** A stand-in for Lambda's Extensions API: records each call, and holds `event/next` open as Lambda does. */
const extensionsApi = async (registerStatus = 200) => {
  const calls: Array<{ method?: string; url?: string; headers: IncomingMessage['headers']; body: string }> = [];
  const held: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      calls.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/2020-01-01/extension/register') {
        res.writeHead(registerStatus, registerStatus === 200 ? { 'Lambda-Extension-Identifier': 'ext-1' } : {}).end('{}');
        return;
      }
      held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => {
      for (const res of held) res.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
};

/**
 * A container's code in a process of its own: registers the extension, keeps a hook that prints
 * `flushed`, prints `ready <registered>`, and waits to be ended.
 */
const container = (api: string) => {
  const script = `
    const { onShutdown, registerShutdownExtension } = await import(${JSON.stringify(SHUTDOWN_MODULE)});
    onShutdown(async () => { process.stdout.write('flushed\\n'); });
    process.stdout.write('ready ' + (await registerShutdownExtension()) + '\\n');
    setInterval(() => undefined, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, AWS_LAMBDA_RUNTIME_API: api, POWERTOOLS_LOG_LEVEL: 'SILENT' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  const ready = new Promise<string>((resolve) =>
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = /ready (\w+)\n/.exec(stdout);
      if (line) resolve(line[1]);
    }),
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { ready, exited, stdout: () => stdout, kill: (signal: NodeJS.Signals) => child.kill(signal) };
};

describe('registerShutdownExtension', () => {
  it('registers an internal extension of no events, asks for its next event, and runs the hooks on SIGTERM before exiting', async () => {
    const api = await extensionsApi();
    try {
      const code = container(api.address);
      const registered = await code.ready;
      code.kill('SIGTERM');
      const exit = await code.exited;

      expect(registered).toBe('true');
      expect(api.calls.map(({ method, url }) => `${method} ${url}`)).toEqual(['POST /2020-01-01/extension/register', 'GET /2020-01-01/extension/event/next']);
      expect(api.calls[0].headers['lambda-extension-name']).toBe(SHUTDOWN_EXTENSION_NAME);
      expect(JSON.parse(api.calls[0].body)).toEqual({ events: [] });
      expect(api.calls[1].headers['lambda-extension-identifier']).toBe('ext-1');
      expect(code.stdout()).toContain('flushed\n');
      expect(exit).toEqual({ code: 0, signal: null });
    } finally {
      await api.close();
    }
  }, 30_000);

  it('answers false and leaves SIGTERM alone when Lambda refuses the registration', async () => {
    const api = await extensionsApi(403);
    try {
      const code = container(api.address);
      const registered = await code.ready;
      code.kill('SIGTERM');
      const exit = await code.exited;

      expect(registered).toBe('false');
      expect(api.calls.map(({ url }) => url)).toEqual(['/2020-01-01/extension/register']);
      expect(code.stdout()).not.toContain('flushed');
      expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      await api.close();
    }
  }, 30_000);
});
