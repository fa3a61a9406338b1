import { request } from 'node:http';
import { connect } from 'node:net';
import { startLocalRuntime, type LocalRuntime } from '../../local/runtime';
import { sharedEngine } from '../helpers/runtime';

/** An answer as read off the wire: status, lower-cased headers and the body text. */
interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

let runtime: LocalRuntime;
let port: number;

beforeAll(async () => {
  runtime = await startLocalRuntime({ ...sharedEngine() });
  port = Number(new URL(runtime.base_url).port);
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

/** Writes `head` (and `body`) on a plain TCP connection and parses whatever HTTP answer comes back. */
const rawExchange = (head: string, body?: Buffer) =>
  new Promise<RawAnswer>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head);
      if (body) socket.write(body);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const split = raw.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`));
      const [statusLine, ...lines] = raw.slice(0, split).split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text: raw.slice(split + 4) });
    });
  });

/** A request through node:http, with the body (if any) written in 1 MB chunks without a Content-Length unless given. */
const httpExchange = (options: { method?: string; path: string; headers?: Record<string, string | number>; body?: Buffer }) =>
  new Promise<RawAnswer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    const body = options.body;
    if (!body) return void req.end();
    let at = 0;
    const pump = () => {
      while (at < body.length) {
        const more = req.write(body.subarray(at, at + 1024 * 1024));
        at += 1024 * 1024;
        if (!more) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });

/** Asserts the answer is the JSON error envelope (DESIGN §7) with the request id of its header, and no stack. */
const expectEnvelope = (answer: RawAnswer, status: number, code: string) => {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.text);
  expect(body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) }, request_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  expect(answer.headers['x-amzn-requestid']).toBe(body.request_id);
  expect(answer.text).not.toMatch(/\bat .+:\d+:\d+|Error:/);
  return body as { error: { code: string; message: string; details: Array<{ field: string; message: string }> } };
};

const withKey = () => ({ 'x-api-key': runtime.api_key });
const ELEVEN_MB = Buffer.alloc(11 * 1024 * 1024, 'a');

describe('the local gateway refuses what API Gateway refuses, in the JSON envelope', () => {
  it.each([
    ['a percent sign without hex digits in a segment', '/v3/workspaces/%zz'],
    ['a cut UTF-8 sequence in a segment', '/v3/devices/dev-%E0%A4%A/jobs'],
    ['malformed percent-encoding in a static segment', '/v3/work%spaces'],
  ])('answers 400 for %s', async (_what, path) => {
    const answer = await httpExchange({ path, headers: withKey() });

    const body = expectEnvelope(answer, 400, 'bad_request');
    expect(body.error.details).toEqual([{ field: 'path', message: expect.stringMatching(/percent-encoding/) }]);
  });

  it('answers 400 for malformed percent-encoding in the query, naming the query', async () => {
    const answer = await httpExchange({ path: `/v3/devices/dev-x/jobs?status=%G1`, headers: withKey() });

    const body = expectEnvelope(answer, 400, 'bad_request');
    expect(body.error.details).toEqual([{ field: 'query', message: expect.stringContaining('status=%G1') }]);
  });

  it('never resolves an encoded %2e%2e: the segment is a parameter value, not a step up', async () => {
    // Resolved as "..", this path would be GET /v3/workspaces/{ws}, which answers 200.
    const answer = await httpExchange({ path: `/v3/workspaces/${runtime.workspace_id}/devices/%2e%2e`, headers: withKey() });
    const upper = await httpExchange({ path: `/v3/workspaces/${runtime.workspace_id}/devices/%2E%2E`, headers: withKey() });

    const body = expectEnvelope(answer, 400, 'validation_error');
    expect(body.error.details.map((d) => d.field)).toEqual(['path.deviceId']);
    expectEnvelope(upper, 400, 'validation_error');
    expect(answer.text).not.toContain('"workspace"');
  });

  it('refuses a job named by an encoded %2e%2e: a name no URL parser can send as it is', async () => {
    const answer = await httpExchange({ method: 'POST', path: `/v3/workspaces/${runtime.workspace_id}/jobs/%2e%2e`, headers: withKey() });

    const body = expectEnvelope(answer, 400, 'validation_error');
    expect(body.error.details.map((d) => d.field)).toEqual(['path.jobName']);
  });

  it('keeps an encoded slash inside its segment: %2f neither splits the path nor reaches another route', async () => {
    // Split on the decoded slash, this would be GET /v3/workspaces/{ws}/devices, which answers 200.
    const answer = await httpExchange({ path: `/v3/workspaces/${runtime.workspace_id}%2fdevices`, headers: withKey() });

    const body = expectEnvelope(answer, 400, 'validation_error');
    expect(body.error.details.map((d) => d.field)).toEqual(['path.workspaceId']);
  });

  it('answers 414 for a 100,000-character path, even when Node’s parser refuses it before any handler', async () => {
    const answer = await rawExchange(`GET /v3/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);

    expectEnvelope(answer, 414, 'bad_request');
  });

  it('answers 414 for a 20,000-character path that Node’s parser refuses with its headers in the same packet', async () => {
    const answer = await rawExchange(`GET /v3/workspaces/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${runtime.api_key}\r\n\r\n`);

    expectEnvelope(answer, 414, 'bad_request');
  });

  it('answers 400 naming a query parameter called __proto__, as any unknown parameter', async () => {
    const answer = await httpExchange({ path: '/v3/workspaces?__proto__=1', headers: withKey() });

    const body = expectEnvelope(answer, 400, 'validation_error');
    expect(body.error.details).toEqual([{ field: 'query.__proto__', message: 'Unknown field.' }]);
  });

  it('answers 414 for a URL just over API Gateway’s 10,240 characters', async () => {
    const answer = await httpExchange({ path: `/v3/workspaces?name=${'a'.repeat(10_300)}`, headers: withKey() });

    expectEnvelope(answer, 414, 'bad_request');
  });

  it('answers 431 for a 100 KB header, refused by Node’s parser', async () => {
    const answer = await rawExchange(`GET /v3/workspaces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(100_000)}\r\n\r\n`);

    expectEnvelope(answer, 431, 'bad_request');
  });

  it('answers 431 for headers just over API Gateway’s 10,240 bytes', async () => {
    const answer = await httpExchange({ path: '/v3/workspaces', headers: { ...withKey(), 'x-big': 'b'.repeat(11_000) } });

    expectEnvelope(answer, 431, 'bad_request');
  });

  it('answers 400 in the envelope for a request that is not HTTP', async () => {
    const answer = await rawExchange('NOT-HTTP\r\n\r\n');

    expectEnvelope(answer, 400, 'bad_request');
  });

  it('gives fetch a 413 for an 11 MB body, not a reset, and keeps serving', async () => {
    const response = await fetch(`${runtime.base_url}/workspaces`, {
      method: 'POST',
      headers: { ...withKey(), 'content-type': 'application/json' },
      body: ELEVEN_MB,
    });
    const text = await response.text();

    expectEnvelope({ status: response.status, headers: Object.fromEntries(response.headers), text }, 413, 'payload_too_large');
    expect((await fetch(`${runtime.base_url}/workspaces`, { headers: withKey() })).status).toBe(200);
  });

  it('answers 413 for an 11 MB chunked body (no Content-Length) once it passes 10 MB', async () => {
    const answer = await httpExchange({
      method: 'POST',
      path: '/v3/workspaces',
      headers: { ...withKey(), 'content-type': 'application/json' },
      body: ELEVEN_MB,
    });

    expectEnvelope(answer, 413, 'payload_too_large');
  });

  it('answers 413 for a declared 11 MB body over raw TCP before reading it, and the connection closes cleanly', async () => {
    const head = `POST /v3/workspaces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: ${runtime.api_key}\r\nContent-Type: application/json\r\nContent-Length: ${ELEVEN_MB.length}\r\nConnection: close\r\n\r\n`;

    const answer = await rawExchange(head, ELEVEN_MB);

    expectEnvelope(answer, 413, 'payload_too_large');
  });

  it('refuses a declared oversize body at Expect: 100-continue, before the client sends it', async () => {
    const head = `POST /v3/workspaces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: ${runtime.api_key}\r\nContent-Type: application/json\r\nContent-Length: ${ELEVEN_MB.length}\r\nExpect: 100-continue\r\n\r\n`;

    const answer = await rawExchange(head);

    expectEnvelope(answer, 413, 'payload_too_large');
  });
});

describe('the local gateway’s connections', () => {
  it('keeps an idle keep-alive connection a minute and says so, so a pooled client never reuses one it is closing', async () => {
    const answer = await httpExchange({ path: '/v3/workspaces', headers: { ...withKey(), connection: 'keep-alive' } });

    expect(answer.status).toBe(200);
    expect(answer.headers['keep-alive']).toBe('timeout=60');
  });
});
