/**
 * `fleetstream devices` against `npm start`, as an operator runs it: the devices a query (or a
 * group) matches, every page of them, as a table, a JSON array or a count; found by --local (the
 * runtime file) or by --url; a malformed query exits 2 with the API's message. `fleetstream
 * device --create --device-tag` makes tagged devices. `fleetstream alarms` lists a workspace's
 * alarms and acknowledges one.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { until } from '../../local/ports';
import { fleetstreamArgs } from '../helpers/cli';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';

const run = promisify(execFile);

let stack: LocalStack;
let api: ApiClient;
let ws: string;
/** The devices of milan, in ID order (the list's), and one elsewhere. */
let milan: string[];
let rome: string;
const scratch = mkdtempSync(join(tmpdir(), 'cli-devices-'));

const fleetstream = async (command: string, ...args: string[]) => {
  try {
    const { stdout, stderr } = await run(process.execPath, fleetstreamArgs(command, args), { env: { ...process.env, FLEETSTREAM_API_KEY: '' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
};
/** `fleetstream devices` on this stack, found by its runtime file, with the READY line's key (it runs in memory: no bootstrap.json). */
const devices = (...args: string[]) => fleetstream('devices', '--local', '--data-dir', stack.dataDir, '--key', stack.api_key, ...args);

beforeAll(async () => {
  stack = await startLocalStack({}, undefined, { readyTimeoutMs: 170_000 });
  api = apiClient(stack.base_url, stack.api_key);
  ws = stack.workspace_id;
  const create = async (name: string, tags: Record<string, string>) => {
    const { status, body } = await api.post(`/workspaces/${ws}/devices`, { name, tags });
    expect(status).toBe(200);
    return body.device.id as string;
  };
  milan = [];
  for (let i = 0; i < 5; i++) milan.push(await create(`milan-${i}`, { site: 'milan', model: i % 2 ? 'v1' : 'v2' }));
  rome = await create('rome-0', { site: 'rome', model: 'v2' });
}, 180_000);
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await stack?.stop();
});

describe('fleetstream devices', () => {
  it('prints the matching devices as JSON, exactly as the API lists them', async () => {
    const { code, stdout } = await devices('--q', 'tags.site = "milan"', '--json');

    expect(code).toBe(0);
    const listed = JSON.parse(stdout) as Array<{ id: string; tags: Record<string, string> }>;
    expect(listed.map((d) => d.id)).toEqual(milan);
    const fromApi = (await api.get(`/workspaces/${ws}/devices?q=${encodeURIComponent('tags.site = "milan"')}`)).body.devices;
    expect(listed).toEqual(fromApi);
  });

  it('reads every page, saying its progress on stderr, each device once', async () => {
    const { code, stdout, stderr } = await devices('--q', 'tags.site = "milan"', '--json', '--page-size', '2');

    expect(code).toBe(0);
    expect((JSON.parse(stdout) as Array<{ id: string }>).map((d) => d.id)).toEqual(milan);
    expect(stderr).toContain('devices: 2 devices read (1 page)…');
    expect(stderr).toContain('devices: 4 devices read (2 pages)…');
    expect(stderr).toContain('devices: 5 devices read (3 pages), done');
    expect((await devices('--q', 'tags.site = "milan"', '--json', '--page-size', '2', '--quiet')).stderr).toBe('');
  });

  it('counts, with --count (and --json), over several pages', async () => {
    expect((await devices('--q', 'tags.model = "v2"', '--count', '--page-size', '1', '--quiet')).stdout).toBe('4\n');
    expect(JSON.parse((await devices('--q', 'tags.site = "milan" AND tags.model = "v1"', '--count', '--json')).stdout)).toEqual({ count: 2 });
    expect((await devices('--q', 'tags.site = "nowhere"', '--count')).stdout).toBe('0\n');
    expect(JSON.parse((await devices('--q', 'tags.site = "nowhere"', '--json')).stdout)).toEqual([]);
  });

  it('prints a table by default: a header, then a row per device with its tags', async () => {
    const { code, stdout } = await devices('--q', 'tags.site = "rome"');
    const lines = stdout.trimEnd().split('\n');

    expect(code).toBe(0);
    expect(lines[0]).toMatch(/^ID\s+NAME\s+FLEET\s+ONLINE\s+LAST SEEN\s+FIRMWARE\s+TAGS$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${rome}\\s+rome-0\\s+default\\s+no\\s+-\\s+-\\s+site=rome model=v2$`));
  });

  it('lists every device without --q, a group’s devices with --group, and finds a deployed API with --url and --key', async () => {
    const group = (await api.post(`/workspaces/${ws}/groups`, { name: 'v1', query: 'tags.model = "v1"' })).body.group.id as string;

    const all = await devices('--count', '--workspace', ws);
    const grouped = await devices('--group', group, '--json');
    const byUrl = await fleetstream('devices', '--url', stack.base_url, '--key', stack.api_key, '--q', 'tags.site = "rome"', '--json');

    expect(all.stdout).toBe('6\n');
    expect((JSON.parse(grouped.stdout) as Array<{ id: string }>).map((d) => d.id)).toEqual([milan[1], milan[3]]);
    expect([byUrl.code, (JSON.parse(byUrl.stdout) as Array<{ id: string }>).map((d) => d.id)]).toEqual([0, [rome]]);
  });

  it('exits 2 with the API’s message on a malformed query, and on an unknown group; 1 when the key is refused', async () => {
    const bad = await devices('--q', 'tags.site = = "milan"');
    const group = await devices('--group', 'grp-123456789');
    const refused = await fleetstream('devices', '--url', stack.base_url, '--key', 'fsk_not-a-key', '--q', 'name = "x"');

    expect([bad.code, bad.stdout]).toEqual([2, '']);
    expect(bad.stderr).toMatch(/^devices: .*\(query\.q: .*\d.*\)\n$/);
    expect([group.code, group.stderr]).toEqual([2, expect.stringMatching(/^devices: .*not found/i)]);
    expect(refused.code).toBe(1);
  });

  it('says so when the runtime runs in memory and no key is given', async () => {
    const { code, stderr } = await fleetstream('devices', '--local', '--data-dir', stack.dataDir, '--q', 'name = "x"');

    expect([code, stderr]).toEqual([2, expect.stringMatching(/runs in memory.*--key/)]);
  });
});

describe('fleetstream device --create --device-tag', () => {
  it('creates its devices with the tags given', async () => {
    const credentials = join(scratch, 'tagged.json');
    const { code, stderr } = await fleetstream(
      'device',
      ...['--create', '2', '--credentials', credentials, '--base-url', stack.base_url, '--api-key', stack.api_key, '--workspace', ws],
      ...['--device-tag', 'site=turin', '--device-tag', 'batch=sim', '--duration', '1', '--interval', '0', '--quiet'],
    );

    expect([code, stderr]).toEqual([0, expect.stringContaining('2 devices with credentials written')]);
    const tagged = (await api.get(`/workspaces/${ws}/devices?q=${encodeURIComponent('tags.site = "turin"')}`)).body.devices;
    expect(tagged.map((d: { tags: Record<string, string> }) => d.tags)).toEqual([
      { site: 'turin', batch: 'sim' },
      { site: 'turin', batch: 'sim' },
    ]);
  });
});

describe('fleetstream alarms', () => {
  const alarms = (...args: string[]) => fleetstream('alarms', '--local', '--data-dir', stack.dataDir, '--key', stack.api_key, ...args);
  const ack = (...args: string[]) => fleetstream('alarms', 'ack', ...args, '--local', '--data-dir', stack.dataDir, '--key', stack.api_key);
  let door: ReturnType<typeof deviceClient>;
  let alarmId: string;
  const start = new Date().toISOString();

  beforeAll(async () => {
    // A condition rule of 0 s: the condition milan-0 opens opens its alarm at once (the registry stream).
    const rule = await api.post(`/workspaces/${ws}/alarm-rules`, { name: 'door open', kind: 'condition', severity: 'major', tag: 'door', for_seconds: 0 });
    expect(rule.status).toBe(201);
    const { credentials } = (await api.post(`/workspaces/${ws}/devices/${milan[0]}/identities`)).body;
    door = deviceClient(stack.base_url, await deviceToken(credentials));
    expect((await door.post('/conditions', { uuid: 'door-1', tag: 'door', payload: null, start })).status).toBeLessThan(300);
    await until(async () => (await api.get(`/workspaces/${ws}/alarms?status=open`)).body.alarms.length === 1, 'the door’s alarm', 90_000);
    alarmId = (await api.get(`/workspaces/${ws}/alarms?status=open`)).body.alarms[0].id;
  }, 120_000);

  it('lists the open alarms as JSON, exactly as the API lists them, and as a table, by device name or ID', async () => {
    const json = await alarms('--json');
    const byName = await alarms('--device', 'milan-0');
    const none = await alarms('--device', milan[1], '--json');
    const minor = await alarms('--severity', 'minor');

    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual((await api.get(`/workspaces/${ws}/alarms?status=open`)).body.alarms);
    const lines = byName.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+SEVERITY\s+STATUS\s+KIND\s+RULE\s+DEVICE\s+OPENED\s+ACKNOWLEDGED BY$/);
    expect(lines.slice(1)).toEqual([expect.stringMatching(new RegExp(`^${alarmId}\\s+major\\s+open\\s+condition\\s+door open\\s+${milan[0]}\\s+\\S+\\s+-$`))]);
    expect(JSON.parse(none.stdout)).toEqual([]);
    expect(minor.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('acknowledges with a note, by the key’s name; lists it under --status acknowledged', async () => {
    const { code, stdout } = await ack(alarmId, '--note', 'on my way', '--json');

    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ id: alarmId, status: 'acknowledged', note: 'on my way', acknowledged_by: expect.any(String) });
    expect((JSON.parse((await alarms('--status', 'acknowledged', '--json')).stdout) as Array<{ id: string }>).map((a) => a.id)).toEqual([alarmId]);
    expect(JSON.parse((await alarms('--json')).stdout)).toEqual([]);
  });

  it('exits 2 saying why: a closed alarm (409), an unknown alarm, a device no device is named', async () => {
    expect((await door.post('/conditions', { uuid: 'door-1', finish_payload: null })).status).toBeLessThan(300);
    await until(async () => (await api.get(`/workspaces/${ws}/alarms?status=closed`)).body.alarms.length === 1, 'the alarm closed', 90_000);

    const closed = await ack(alarmId);
    const unknown = await ack('alm-nonexistent00000000000');
    const nameless = await alarms('--device', 'nobody');

    expect([closed.code, closed.stdout, closed.stderr]).toEqual([
      2,
      '',
      expect.stringMatching(new RegExp(`^alarms: Alarm ${alarmId} is closed: there is nothing to acknowledge`)),
    ]);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/^alarms: Alarm alm-nonexistent00000000000 not found/)]);
    expect([nameless.code, nameless.stdout, nameless.stderr]).toEqual([2, '', expect.stringMatching(/^alarms: no device is named "nobody"/)]);
  });
});
