import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildProgram, runFleetstream } from '../../bin/commands/program';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

/** `fleetstream …args` in this process, its output captured: help and errors are written before any action runs. */
const fleetstream = async (...args: string[]) => {
  let stdout = '';
  let stderr = '';
  const code = await runFleetstream(args, { writeOut: (text) => (stdout += text), writeErr: (text) => (stderr += text) });
  return { code, stdout, stderr };
};

const commands = buildProgram().commands.filter((c) => c.name() !== 'help');
const names = commands.map((c) => c.name());
/** Each command's required options, given a value every parser takes. */
const requiredArgs = (name: string) =>
  commands
    .find((c) => c.name() === name)!
    .options.filter((o) => o.mandatory)
    .flatMap((o) => [o.long!, '1']);
const noStackTrace = /^\s+at /m;

describe('fleetstream', () => {
  it('has a subcommand for each CLI, an npm script alias for each, and the package’s bin', () => {
    expect(names.sort()).toEqual(['alarms', 'cost', 'create-account', 'device', 'devices', 'limits', 'openapi', 'replay-dlq', 'smoke', 'start']);
    for (const name of names) expect([name, pkg.scripts[name]]).toEqual([name, `tsx bin/fleetstream.ts ${name}`]);
    expect(pkg.bin).toEqual({ fleetstream: 'bin/fleetstream.mjs' });
  });

  it('lists every subcommand in its help', async () => {
    const { code, stdout } = await fleetstream('--help');

    expect(code).toBe(0);
    for (const name of names) expect(stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it.each(names)('%s --help: exits 0 with a usage naming the command and every option', async (name) => {
    const { code, stdout, stderr } = await fleetstream(name, '--help');

    expect([code, stderr]).toEqual([0, '']);
    expect(stdout).toMatch(new RegExp(`^Usage: fleetstream ${name} `));
    for (const option of commands.find((c) => c.name() === name)!.options) expect(stdout).toContain(option.flags);
  });

  it.each(names)('%s with an unknown option: exits 2 with one line naming it and the help, no stack trace', async (name) => {
    const { code, stdout, stderr } = await fleetstream(name, ...requiredArgs(name), '--no-such-option');

    expect([code, stdout]).toEqual([2, '']);
    expect(stderr).toBe(`fleetstream ${name}: unknown option '--no-such-option'. See \`fleetstream ${name} --help\`.\n`);
  });

  it.each(names.filter((name) => requiredArgs(name).length))('%s without its required options: exits 2 naming the first one', async (name) => {
    const { code, stderr } = await fleetstream(name);
    const [first] = commands.find((c) => c.name() === name)!.options.filter((o) => o.mandatory);

    expect(code).toBe(2);
    expect(stderr).toBe(`fleetstream ${name}: required option '${first.flags}' not specified. See \`fleetstream ${name} --help\`.\n`);
  });

  it.each([
    [['device', '--credentials', 'f.json', '--corrupt', '2'], "option '--corrupt <fraction>' argument '2' is invalid. Expected a number from 0 to 1."],
    [['device', '--credentials', 'f.json', '--count', '1.5'], "option '--count <n>' argument '1.5' is invalid. Expected a whole number of at least 1."],
    [
      ['device', '--credentials', 'f.json', '--interval', 'soon'],
      "option '--interval <seconds>' argument 'soon' is invalid. Expected a number from 0 to 86,400.",
    ],
    [['device', '--credentials', 'f.json', '--create', '3', '--api-key', 'k'], '--create needs --base-url, --workspace.'],
    [
      ['cost', '--points-per-day', '1000', '--devices', '10', '--backend', 'x'],
      "option '--backend <store>' argument 'x' is invalid. Allowed choices are dynamodb, timestream.",
    ],
    [['cost', '--points-per-day', '0', '--devices', '10'], "option '--points-per-day <n>' argument '0' is invalid. Expected a whole number of at least 1."],
    [
      ['cost', '--points-per-day', '1000', '--devices', '10', '--retention-days', '3651'],
      "option '--retention-days <days>' argument '3651' is invalid. Expected a whole number from 1 to 3,650.",
    ],
    [
      ['cost', '--points-per-day', '1000', '--devices', '10', '--memory-mb', '64'],
      "option '--memory-mb <mb>' argument '64' is invalid. Expected a whole number from 128 to 10,240.",
    ],
    [
      ['create-account', '--name', 'Acme', '--local', '--port', '70000'],
      "option '--port <port>' argument '70000' is invalid. Expected a whole number from 1 to 65,535.",
    ],
    [
      ['create-account', '--name', 'Acme', '--local', '--email', 'ops.example.com'],
      "option '--email <address>' argument 'ops.example.com' is invalid. Expected an e-mail address, e.g. ops@example.com.",
    ],
    [
      ['limits', '--workspace', 'wks-1', '--local', '--set', 'devices'],
      "option '--set <limit=value>' argument 'devices' is invalid. Expected <limit>=<value>, e.g. --set devices=5.",
    ],
    [['replay-dlq', '--queue', 'forward', '--max', '0'], "option '--max <n>' argument '0' is invalid. Expected a whole number of at least 1."],
    [
      ['smoke', '--url', 'http://x/v3', '--key', 'k', '--timeout-seconds', '0'],
      "option '--timeout-seconds <seconds>' argument '0' is invalid. Expected a number from 1 to 3,600.",
    ],
    [
      ['device', '--credentials', 'f.json', '--device-tag', 'a site=milan'],
      'option \'--device-tag <key=value>\' argument \'a site=milan\' is invalid. Expected <key>=<value>, the key 1 to 64 letters, digits, "_", "." or "-", e.g. --device-tag site=milan.',
    ],
    [['device', '--credentials', 'f.json', '--device-tag', 'site=milan'], '--device-tag tags the devices --create makes: give --create <n>.'],
    [['devices', '--local', '--page-size', '1001'], "option '--page-size <n>' argument '1001' is invalid. Expected a whole number from 1 to 1,000."],
    [['devices', '--q', 'name = "a"'], 'say which API: --local for `npm start`, or --url <ApiUrl of the deployed stack>.'],
    [['devices', '--local', '--url', 'http://x/v3', '--key', 'k'], 'give --local or --url, not both.'],
    [['devices', '--local', '--q', 'name = "a"', '--group', 'grp-1'], "option '--group <id>' cannot be used with option '--q <query>'."],
    [['devices', '--local', '--group', 'grp-1', '--fleet', 'flt-1'], '--fleet does not apply to --group: a group’s query says which devices.'],
    [['cost', '--points-per-day', '1000', '--devices', '10', 'extra'], "too many arguments for 'cost'. Expected 0 arguments but got 1: extra."],
    [
      ['alarms', '--local', '--status', 'sleeping'],
      "option '--status <status>' argument 'sleeping' is invalid. Allowed choices are open, acknowledged, closed, all.",
    ],
    [
      ['alarms', '--local', '--severity', 'apocalyptic'],
      "option '--severity <severity>' argument 'apocalyptic' is invalid. Allowed choices are critical, major, minor, warning.",
    ],
    [['alarms', '--severity', 'major'], 'say which API: --local for `npm start`, or --url <ApiUrl of the deployed stack>.'],
    [['alarms', '--local', '--page-size', '0'], "option '--page-size <n>' argument '0' is invalid. Expected a whole number from 1 to 1,000."],
  ])('%j: exits 2 with %s', async (args, message) => {
    const { code, stderr } = await fleetstream(...args);

    expect([code, stderr]).toEqual([2, `fleetstream ${args[0]}: ${message} See \`fleetstream ${args[0]} --help\`.\n`]);
  });

  it.each([
    [['alarms', 'ack'], "missing required argument 'alarm-id'."],
    [['alarms', 'ack', 'alm-1', '--url', 'http://x/v3'], '--url needs --key <fsk_…> (or FLEETSTREAM_API_KEY).'],
  ])('%j: exits 2 naming `alarms ack` and its help', async (args, message) => {
    const { code, stderr } = await fleetstream(...args);

    expect([code, stderr]).toEqual([2, `fleetstream alarms ack: ${message} See \`fleetstream alarms ack --help\`.\n`]);
  });

  it.each(['create-account', 'limits'])('%s without a stack to act on: exits 2 saying which to name', async (name) => {
    const table = process.env.REGISTRY_TABLE;
    delete process.env.REGISTRY_TABLE;
    try {
      const { code, stderr } = await fleetstream(name, ...requiredArgs(name));

      expect([code, stderr]).toEqual([
        2,
        `fleetstream ${name}: say which stack: --local for \`npm start\`, or --table <RegistryTableName output of the deployed stack>. See \`fleetstream ${name} --help\`.\n`,
      ]);
    } finally {
      if (table !== undefined) process.env.REGISTRY_TABLE = table;
    }
  });

  it('create-account --email on a deployed stack without its user pool: exits 2 naming it, before writing anything', async () => {
    const pool = process.env.USER_POOL_ID;
    delete process.env.USER_POOL_ID;
    try {
      const { code, stderr } = await fleetstream('create-account', '--name', 'Acme', '--table', 'no-such-table', '--email', 'ops@acme.example');

      expect([code, stderr]).toEqual([
        2,
        'fleetstream create-account: --email on a deployed stack needs its user pool: --user-pool <UserPoolId output of the deployed stack>, or USER_POOL_ID. See `fleetstream create-account --help`.\n',
      ]);
    } finally {
      if (pool !== undefined) process.env.USER_POOL_ID = pool;
    }
  });

  it('answers an unknown command, and no command, as a usage error', async () => {
    const unknown = await fleetstream('strat');
    const none = await fleetstream();

    expect([unknown.code, unknown.stderr]).toEqual([2, "fleetstream: unknown command 'strat' (Did you mean start?). See `fleetstream --help`.\n"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^Usage: fleetstream /);
  });

  it('prints its version and the help of a command named to `help`', async () => {
    const version = await fleetstream('--version');
    const help = await fleetstream('help', 'cost');

    expect(version).toEqual({ code: 0, stdout: `${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}\n`, stderr: '' });
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^Usage: fleetstream cost /)]);
  });

  describe('the package’s bin, run as npx runs it', () => {
    const bin = `${ROOT}${pkg.bin.fleetstream}`;

    it('is an executable that runs under node', async () => {
      accessSync(bin, constants.X_OK);
      expect(readFileSync(bin, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);

      const { stdout, stderr } = await run(bin, ['device', '--help'], { cwd: ROOT });

      expect(stderr).toBe('');
      expect(stdout).toMatch(/^Usage: fleetstream device --credentials <file> \[options\]\n/);
    });

    it('exits 2 on a bad value with one line and no stack trace', async () => {
      const failed = (await run(process.execPath, [bin, 'device', '--credentials', 'f.json', '--corrupt', '2'], { cwd: ROOT }).catch(
        (error: unknown) => error,
      )) as {
        code: number;
        stdout: string;
        stderr: string;
      };

      expect([failed.code, failed.stdout]).toEqual([2, '']);
      expect(failed.stderr).toBe(
        "fleetstream device: option '--corrupt <fraction>' argument '2' is invalid. Expected a number from 0 to 1. See `fleetstream device --help`.\n",
      );
      expect(failed.stderr).not.toMatch(noStackTrace);
    });
  });
});
