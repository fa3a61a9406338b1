import { jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { until, waitFor } from '../../local/ports';
import {
  BROWSER_WAIT_MS,
  type SharedStack,
  bodyText,
  clickText,
  confirmDialog,
  sharedStack,
  fill,
  launchChromium,
  screenshot,
  waitForAlert,
  waitForText,
} from '../helpers/browser';
import { formatIso } from '../../console/src/lib/time';
import { parseCsv } from '../helpers/csv';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver';

// A page's waits are BROWSER_WAIT_MS, a bound a loaded machine meets: a test may need more than one.
jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

// One scenario, in order, as a person would go through the console: each step uses what the one
// before made (the session, the workspace, the device, its credentials, the key).
let stack: SharedStack;
let browser: Browser;
let page: Page;
let receiver: WebhookReceiver;
let consoleUrl: string;
const downloads = mkdtempSync(join(tmpdir(), 'fleetstream-downloads-'));
// What the console's Content-Security-Policy refused, on any page of the scenario (none, at its end).
const cspViolations: string[] = [];
const email = `person-${Date.now()}@example.com`;
const password = 'Correct-Horse-7-battery';
const state: {
  workspaceId?: string;
  deviceId?: string;
  credentials?: { devinfo: { device_id: string; key_id: string }; prvkey: string };
  apiKey?: string;
  secret?: string;
} = {};

const api = (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${stack.base_url}${path}`, { ...init, headers: { 'content-type': 'application/json', 'x-api-key': key, ...(init.headers ?? {}) } });

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const hashOf = () => page.evaluate(() => (globalThis as Dom).location.hash as string);

/** The rollout page's counts: each state's, and `total`. */
const countsOnPage = () =>
  page.$$eval('[data-testid="rollout-counts"] [data-count]', (els) =>
    Object.fromEntries(els.map((el) => [el.getAttribute('data-count'), Number(el.textContent)])),
  ) as Promise<Record<string, number>>;

/** How many refreshes the rollout page has shown (each reads its counts, then its devices). */
const refreshesShown = () => page.$eval('[data-testid="rollout-view"]', (el) => Number(el.getAttribute('data-refreshes')));

/**
 * Presses the rollout page's Refresh and waits for that refresh to be shown, until `condition`
 * holds: what a pushed rollout count will do. One refresh at a time, so none is superseded.
 */
const refreshUntil = (condition: () => Promise<boolean>, what: string, timeoutMs = 60_000) =>
  until(
    async () => {
      if (await condition()) return true;
      const shown = await refreshesShown();
      await clickText(page, 'Refresh');
      await until(async () => (await refreshesShown()) > shown, 'the refresh shown');
      return condition();
    },
    what,
    timeoutMs,
  );

/** Ticks a fleet on the Jobs page, once the fleets are listed. */
const chooseFleet = async (name: string) => {
  await until(
    async () =>
      (await page.$$eval('input[name="target-fleet"]', (boxes) => boxes.map((b) => (b as Dom).parentElement.textContent as string))).some(
        (t) => t.trim() === name,
      ),
    `the fleet ${name} to choose`,
  );
  await page.$$eval('input[name="target-fleet"]', (boxes, fleet) => (boxes.find((b) => b.parentElement!.textContent!.trim() === fleet) as Dom).click(), name);
};

beforeAll(async () => {
  // the shared runtime sweeps every second: a canceled rollout's queued devices are canceled at its next run
  stack = sharedStack();
  consoleUrl = stack.console_url;
  receiver = await startWebhookReceiver();
  browser = await launchChromium();
  page = await browser.newPage();
  // A bound a loaded machine still meets: the suite runs two workers on two cores beside this page.
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  page.on('dialog', (dialog) => void dialog.accept());
  await page.exposeFunction('reportCspViolation', (line: string) => void cspViolations.push(line));
  await page.evaluateOnNewDocument(() => {
    const g = globalThis as Dom;
    g.document.addEventListener('securitypolicyviolation', (e: Dom) =>
      g.reportCspViolation(`${e.violatedDirective} refused ${e.blockedURI} (${e.sourceFile}:${e.lineNumber})`),
    );
  });
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await receiver?.stop();
});

describe('the console in Chromium on npm start', () => {
  it('serves its configuration and signs a new user up with the e-mailed code', async () => {
    const config = (await (await fetch(new URL('/config.json', consoleUrl))).json()) as Record<string, string>;
    expect(config.apiUrl).toBe(stack.base_url);

    await page.goto(consoleUrl);
    await waitForText(page, 'Sign in');
    await screenshot(page, '01-sign-in');
    await clickText(page, 'Create an account');
    await fill(page, 'email', email);
    await fill(page, 'password', password);
    await clickText(page, 'Create account');
    await waitForText(page, 'Confirm your e-mail address');

    const outbox = new URL(`/local/outbox?to=${encodeURIComponent(email)}`, consoleUrl);
    const code = await until(async () => {
      const { messages } = (await (await fetch(outbox)).json()) as { messages: { code: string }[] };
      return messages.length > 0;
    }, 'the verification code in the outbox').then(
      async () => ((await (await fetch(outbox)).json()) as { messages: { code: string }[] }).messages.at(-1)!.code,
    );
    await fill(page, 'code', code);
    await screenshot(page, '02-confirm');
    await clickText(page, 'Confirm');

    // signed in: the overview of the first workspace (made at sign-up) is the home; the workspaces page lists it
    await waitForText(page, 'Sign out');
    await until(async () => /^#\/w\/wks-[^/]+\/overview$/.test(await hashOf()), 'the first workspace’s overview');
    await page.goto(`${consoleUrl}#/workspaces`);
    await waitForText(page, 'New workspace');
    await screenshot(page, '03-workspaces');
    await until(async () => (await page.$$eval('table.list tbody tr', (rows) => rows.length)) === 1, 'the first workspace listed');
  });

  it('creates a workspace and switches to it', async () => {
    await fill(page, 'workspace-name', 'Browser workspace');
    await fill(page, 'workspace-description', 'made in Chromium');
    await clickText(page, 'Create workspace');
    await until(async () => (await hashOf()).startsWith('#/w/wks-'), 'the new workspace to open');
    state.workspaceId = decodeURIComponent((await hashOf()).split('/')[2]);
    await waitForText(page, 'Browser workspace');
    const options = await page.$$eval('select[aria-label="Workspace"] option', (o) => o.map((x) => x.textContent));
    expect(options).toContain('Browser workspace');

    // the session outlives a reload, on the same page
    await page.reload();
    await waitForText(page, 'New fleet');
    expect(await hashOf()).toBe(`#/w/${state.workspaceId}/devices`);
  });

  it('shows another account’s workspace as not found, with nothing of it', async () => {
    // npm start's first account (its READY line) is not this user's
    await page.goto(`${consoleUrl}#/w/${stack.workspace_id}/devices`);
    await waitForAlert(page, /another account/);
    expect(await bodyText(page)).not.toContain('Devices created without a fleet');
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/devices`);
    // this workspace's own fleets, not the form left over from the refused one
    await waitForText(page, 'Devices created without a fleet');
  });

  it('shows an API error in words, with the field it names', async () => {
    await fill(page, 'fleet-name', '   ');
    await until(async () => (await page.$eval('[name="fleet-name"]', (el) => (el as Dom).value)) === '   ', 'the name typed');
    await clickText(page, 'Create fleet');
    await waitForAlert(page, /name:/);
  });

  it('creates a fleet and a device in it', async () => {
    await fill(page, 'fleet-name', 'north');
    await clickText(page, 'Create fleet');
    await until(
      async () => (await page.$$eval('select[name="device-fleet"] option', (o) => o.map((x) => x.textContent))).includes('north'),
      'the fleet in the form',
    );
    await fill(page, 'device-name', 'sensor-1');
    await page.select(
      'select[name="device-fleet"]',
      await page.$eval('select[name="device-fleet"]', (s) => ([...(s as Dom).options] as Dom[]).find((o) => o.text === 'north')!.value as string),
    );
    await clickText(page, 'Create device');
    await waitForText(page, '1 of 1 devices');
    await screenshot(page, '04-fleets-and-devices');
    await clickText(page, 'sensor-1', 'a');
    await until(async () => (await hashOf()).includes('/devices/dev-'), 'the device page');
    state.deviceId = decodeURIComponent((await hashOf()).split('/').at(-1)!);
    await waitForText(page, 'north');
  });

  it('creates an identity and downloads its zdevice.json once', async () => {
    await clickText(page, 'Create identity');
    await clickText(page, 'Download zdevice.json');
    await until(() => readdirSync(downloads).includes('zdevice.json'), 'zdevice.json in the downloads');
    state.credentials = JSON.parse(readFileSync(join(downloads, 'zdevice.json'), 'utf8'));
    expect(state.credentials!.devinfo.device_id).toBe(state.deviceId);
    await screenshot(page, '05-device');
    await clickText(page, 'I have saved them');
    // shown once: the credentials are gone from the page, and the list has the identity
    expect(await bodyText(page)).not.toContain('Download zdevice.json');
    await waitForText(page, state.credentials!.devinfo.key_id);
  });

  it('renames the device and moves it to another fleet and back', async () => {
    const select = async (fleet: string) =>
      page.select(
        'select[name="move-fleet"]',
        await page.$eval('select[name="move-fleet"]', (el, f) => ([...(el as Dom).options] as Dom[]).find((o) => o.text === f)!.value as string, fleet),
      );
    await until(async () => (await page.$$eval('select[name="move-fleet"] option', (o) => o.length)) === 2, 'both fleets in the move form');
    await fill(page, 'rename', 'sensor-1b');
    await select('default');
    await clickText(page, 'Save');
    await until(async () => /Fleet\s+default/.test(await page.$eval('dl.facts', (el) => (el as Dom).innerText as string)), 'the device in default');
    await waitForText(page, 'Device sensor-1b');
    await fill(page, 'rename', 'sensor-1');
    await select('north');
    await clickText(page, 'Save');
    await until(async () => /Fleet\s+north/.test(await page.$eval('dl.facts', (el) => (el as Dom).innerText as string)), 'the device back in north');
    expect(await page.$eval('h2', (el) => el.textContent)).toMatch(/^Device sensor-1 dev-/);
  });

  it('schedules a firmware update on the device and shows it pending', async () => {
    await fill(page, 'firmware-id', 'base');
    await fill(page, 'firmware-version', '1.2.0');
    await clickText(page, 'Schedule FOTA');
    await until(
      async () => (await page.$eval('[data-testid="device-fota"]', (el) => el.textContent ?? '')).includes('base 1.2.0: pending'),
      'the FOTA pending',
    );
  });

  it('schedules a job on the device with a JSON value checked as it is typed, and shows it pending', async () => {
    await fill(page, 'job-name', 'reboot');
    await fill(page, 'job-value', '{"delay": ');
    await waitForText(page, 'Not valid JSON');
    expect(await page.$$eval('button[type="submit"]', (b) => b.filter((x) => x.textContent === 'Schedule job').every((x) => (x as Dom).disabled))).toBe(true);
    await fill(page, 'job-value', '{"delay": 5}');
    await waitForText(page, 'Valid JSON object.');
    await clickText(page, 'Schedule job');
    await until(async () => (await page.$eval('[data-testid="device-jobs"]', (t) => (t as Dom).innerText)).includes('pending'), 'the job pending');
    expect(await page.$eval('[data-testid="device-jobs"]', (t) => (t as Dom).innerText)).toContain('{"delay":5}');
  });

  it('schedules a job on a fleet, which opens its rollout with its device counted', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/jobs`);
    await waitForText(page, 'Schedule on');
    await chooseFleet('north');
    await fill(page, 'job-name', 'update-config');
    await fill(page, 'job-value', '{"interval": 60}');
    await clickText(page, 'Schedule job');
    await confirmDialog(page); // the fleet-wide guard (issue 33)
    await until(async () => (await hashOf()).includes('/rollouts/rol-'), 'the rollout page');
    await until(async () => (await countsOnPage()).total === 1, 'the rollout’s device counted');
    expect(await countsOnPage()).toMatchObject({ total: 1, pending: 1, queued: 0 });
    expect(await page.$eval('[data-testid="rollout-settings"]', (el) => el.textContent)).toBe('every device released at once; no timeout; no abort rule');
    await screenshot(page, '06-jobs-rollout');
  });

  it('creates an API key shown once, which then works against the API', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/settings`);
    await fill(page, 'key-name', 'from-the-browser');
    await clickText(page, 'Create API key');
    await page.waitForSelector('[data-testid="secret"]');
    state.apiKey = await page.$eval('[data-testid="secret"]', (el) => el.textContent ?? '');
    await browser.defaultBrowserContext().overridePermissions(new URL(consoleUrl).origin, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
    await clickText(page, 'Copy');
    await waitForText(page, 'Copied.');
    expect(await page.evaluate(() => (globalThis as Dom).navigator.clipboard.readText() as Promise<string>)).toBe(state.apiKey);
    await screenshot(page, '07-settings');

    const answer = await api('/workspaces', state.apiKey!);
    expect(answer.status).toBe(200);
    const { workspaces } = (await answer.json()) as { workspaces: { id: string }[] };
    expect(workspaces[0].id).toBe(state.workspaceId);
    await clickText(page, 'I have saved it');
    expect(await page.$('[data-testid="secret"]')).toBeNull();
    await waitForText(page, 'from-the-browser');
  });

  it('configures a webhook and shows its delivery once a device publishes', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/integrations`);
    await fill(page, 'integration-name', 'receiver');
    await fill(page, 'integration-url', receiver.url);
    await clickText(page, 'Create webhook');
    await page.waitForSelector('[data-testid="secret"]');
    state.secret = await page.$eval('[data-testid="secret"]', (el) => el.textContent!);
    await screenshot(page, '08-integrations');

    const token = await deviceToken(state.credentials!);
    const now = Date.now();
    const points = Array.from({ length: 40 }, (_, i) => ({
      tag: 'weather',
      timestamp_device: new Date(now - (40 - i) * 60_000).toISOString(),
      payload: { temp: 20 + i / 10, humidity: 50 + i },
    }));
    const published = await deviceClient(stack.base_url, token).post('/data', points);
    expect(published.status).toBe(202);

    await until(() => receiver.accepted().filter((e) => e.tag === 'weather').length >= 40, 'the 40 points at the receiver');
    const post = receiver.posts.find((p) => p.body.result.some((e) => e.tag === 'weather'))!;
    expect(verifySignature(state.secret!, post.headers, post.raw)).toBe(true);
    await until(async () => {
      await clickText(page, 'Refresh status');
      return !(await page.$eval('[data-testid="last-delivery"]', (el) => el.textContent ?? '—')).includes('—');
    }, 'the last delivery on the page');
    await screenshot(page, '08-integrations-delivered');
  });

  it('sends a test delivery from the keyboard and shows it delivered, then a failing one in words', async () => {
    const button = 'button[aria-label="Send test delivery to receiver"]';
    const before = receiver.posts.length;
    await (await page.waitForSelector(button))!.focus();
    await page.keyboard.press('Enter');

    await waitForText(page, /Delivered: HTTP 200 in \d+ ms\./);
    const tests = receiver.posts.slice(before).filter((p) => p.headers['x-fleetstream-test'] === 'true');
    expect(tests).toHaveLength(1);
    expect(tests[0].body.batch_id).toMatch(/^test-/);
    expect(tests[0].body.result).toEqual([
      expect.objectContaining({ tag: 'fleetstream-test', workspace_id: state.workspaceId, payload: expect.objectContaining({ test: true }) }),
    ]);
    expect(verifySignature(state.secret!, tests[0].headers, tests[0].raw)).toBe(true);
    await screenshot(page, '08-integrations-test-delivered');

    receiver.behave(() => 503);
    try {
      await (await page.waitForSelector(button))!.click();
      await waitForText(page, /Failed: 127\.0\.0\.1:\d+ answered HTTP 503 after \d+ ms — the receiver failed: check its logs\./);
      // the webhook's status on the page shows the failed test as its last error
      await until(
        async () => (await page.$eval('[data-testid="last-error"]', (el) => el.textContent ?? '')).includes('test delivery: HTTP 503'),
        'the last error on the page',
      );
      await screenshot(page, '08-integrations-test-failed');
    } finally {
      receiver.behave(() => 200);
    }
  });

  it('disables and enables the webhook and sets its tag filter', async () => {
    const read = async () => {
      const { integrations } = (await (await api(`/workspaces/${state.workspaceId}/integrations`, state.apiKey!)).json()) as {
        integrations: { enabled: boolean; tags: string[] }[];
      };
      return integrations[0];
    };
    await clickText(page, 'Disable receiver');
    await waitForText(page, '(disabled)');
    expect((await read()).enabled).toBe(false);
    await clickText(page, 'Enable receiver');
    await until(async () => !(await bodyText(page)).includes('(disabled)'), 'the webhook enabled');
    expect((await read()).enabled).toBe(true);
    await fill(page, 'integration-tags', 'weather, alarms');
    await clickText(page, 'Save tags');
    await until(async () => (await read()).tags.length === 2, 'the tag filter saved');
    expect((await read()).tags).toEqual(['weather', 'alarms']);
  });

  it('draws the points in the chart and lists them in the table, and exports them', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/data`);
    await fill(page, 'query-devices', state.deviceId!);
    await clickText(page, 'Run query');
    // storage queries are eventually consistent: run again until all 40 are there
    await until(async () => {
      const summary = await page.$eval('[data-testid="result-summary"]', (el) => el.textContent).catch(() => '');
      if (summary?.includes('40 points')) return true;
      await clickText(page, 'Run query');
      return false;
    }, 'the 40 points in the explorer');
    // two numeric fields (temp, humidity) of one device and tag: 80 points in 2 series
    await page.waitForSelector('[data-testid="chart"] canvas');
    expect(await page.$eval('[data-testid="chart"]', (el) => el.getAttribute('data-points'))).toBe('80');
    expect(await bodyText(page)).toContain('2 numeric series');
    const rows = await page.$$eval('[aria-label="Data points"] [role="row"]', (r) => r.map((x) => (x as Dom).innerText));
    expect(rows.length).toBeGreaterThan(10);
    expect(rows[1]).toContain('weather');
    await screenshot(page, '09-data');

    await clickText(page, 'Export CSV');
    const csvName = () => readdirSync(downloads).find((f) => f.endsWith('.csv'));
    await until(() => Boolean(csvName()), 'the CSV export');
    const csv = readFileSync(join(downloads, csvName()!), 'utf8').trim().split('\r\n');
    expect(csv[0]).toBe('timestamp_device,timestamp_in,fleet_id,device_id,tag,payload');
    expect(csv).toHaveLength(41);
  });

  it('draws a line for each of three devices, named in the legend', async () => {
    // two more devices (one in the default fleet, one in north), made and published for over the API
    const { device: first } = (await (await api(`/workspaces/${state.workspaceId}/devices/${state.deviceId}`, state.apiKey!)).json()) as {
      device: { fleet_id: string };
    };
    const made = [{ name: 'boiler room' }, { name: 'attic', fleet_id: first.fleet_id }];
    const devices = [{ id: state.deviceId!, name: 'sensor-1', credentials: state.credentials! }];
    for (const body of made) {
      const { device } = (await (
        await api(`/workspaces/${state.workspaceId}/devices`, state.apiKey!, { method: 'POST', body: JSON.stringify(body) })
      ).json()) as { device: { id: string } };
      const { credentials } = (await (
        await api(`/workspaces/${state.workspaceId}/devices/${device.id}/identities`, state.apiKey!, { method: 'POST', body: '{"type":"sym"}' })
      ).json()) as {
        credentials: { devinfo: { device_id: string; key_id: string }; prvkey: string };
      };
      devices.push({ id: device.id, name: body.name, credentials });
    }
    // each device at its own times (so each series has no point at the others' x), at its own level
    const now = Date.now();
    for (const [k, device] of devices.entries()) {
      const points = Array.from({ length: 20 }, (_, i) => ({
        tag: 'climate',
        timestamp_device: new Date(now - (30 - i) * 60_000 + k * 20_000).toISOString(),
        payload: { level: 10 * k + (i % 5) },
      }));
      expect((await deviceClient(stack.base_url, await deviceToken(device.credentials)).post('/data', points)).status).toBe(202);
    }

    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/data`);
    await fill(page, 'query-devices', '');
    await fill(page, 'query-tags', 'climate');
    await clickText(page, 'Run query');
    await until(async () => {
      const summary = await page.$eval('[data-testid="result-summary"]', (el) => el.textContent).catch(() => '');
      if (summary?.includes('60 points')) return true;
      await clickText(page, 'Run query');
      return false;
    }, 'the 60 points of the three devices in the explorer');
    expect(await bodyText(page)).toContain('3 numeric series');

    // the canvas itself: where each series' stroke colour is (uPlot draws on a transparent canvas,
    // so a line's anti-aliased edge keeps its colour and only loses alpha). A line crosses most of
    // the canvas's columns; its 20 dots alone would cover a tenth of them.
    const strokes = [
      [0x1f, 0x77, 0xb4],
      [0xff, 0x7f, 0x0e],
      [0x2c, 0xa0, 0x2c],
    ];
    const columnsOfEachColour = () =>
      page.$eval(
        '[data-testid="chart"] canvas',
        (canvas, colours) => {
          const { width, height } = canvas as Dom;
          const { data } = (canvas as Dom).getContext('2d').getImageData(0, 0, width, height);
          const columns = colours.map(() => new Set<number>());
          for (let i = 0; i < data.length; i += 4) {
            if (data[i + 3] < 64) continue;
            const at = colours.findIndex(([r, g, b]) => Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) <= 60);
            if (at >= 0) columns[at].add((i / 4) % width);
          }
          return { width, columns: columns.map((c) => c.size) };
        },
        strokes,
      );
    const drawn = async () => {
      const { width, columns } = await columnsOfEachColour();
      if (!columns.every((n) => n >= width / 2))
        throw new Error(`canvas columns holding each series' colour: ${columns.join(', ')} of ${width} (half of them expected for a line)`);
    };
    await waitFor(drawn, 'a line of each device on the canvas', 20_000);

    const legend = () => page.$$eval('[data-testid="chart"] .u-legend .u-series .u-label', (labels) => labels.slice(1).map((l) => l.textContent));
    await until(async () => (await legend()).every((label) => !label?.includes('dev-')), 'device names in the legend', 20_000);
    expect((await legend()).sort()).toEqual(['attic · climate · level', 'boiler room · climate · level', 'sensor-1 · climate · level']);
    const titles = await page.$$eval('[data-testid="chart"] .u-legend .u-series', (rows) => rows.slice(1).map((r) => (r as Dom).title as string));
    for (const device of devices) expect(titles).toContainEqual(expect.stringContaining(`${device.name} (${device.id})`));
    // the names came after the chart: its legend was relabelled, and every line is still there
    await waitFor(drawn, 'a line of each device on the canvas once named', 20_000);
    await screenshot(page, '10-data-three-devices');
  });

  it('charts the three devices’ averages over the last 30 days from one aggregation, in hours of the browser’s time zone', async () => {
    await fill(page, 'aggregate-field', 'level');
    await fill(page, 'aggregate-tags', 'climate');
    await clickText(page, 'Chart averages');
    await page.waitForSelector('[data-testid="aggregate-chart"] canvas');
    const summary = await page.$eval('[data-testid="aggregate-summary"]', (el) => el.textContent ?? '');
    // the form's 30 days in hours of the page's zone (a month draws in one request): 20 points of each device
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(summary).toContain(`buckets of 1h (${zone}) from 60 points`);
    const legend = await page.$$eval('[data-testid="aggregate-chart"] .u-legend .u-series .u-label', (labels) => labels.slice(1).map((l) => l.textContent));
    expect(legend).toHaveLength(3);
    await until(
      async () => {
        const named = await page.$$eval('[data-testid="aggregate-chart"] .u-legend .u-series .u-label', (labels) => labels.slice(1).map((l) => l.textContent));
        return named.every((label) => !label?.includes('dev-'));
      },
      'device names in the aggregate legend',
      20_000,
    );
    expect(
      (await page.$$eval('[data-testid="aggregate-chart"] .u-legend .u-series .u-label', (labels) => labels.slice(1).map((l) => l.textContent))).sort(),
    ).toEqual(['attic · climate · level · avg', 'boiler room · climate · level · avg', 'sensor-1 · climate · level · avg']);
    await screenshot(page, '11-data-aggregates');
  });

  it('exports every point the query selects to a file in the background, then links its download', async () => {
    // The query form still selects the tag climate: the three devices' 60 points.
    await page.select('select[name="export-format"]', 'csv');
    await clickText(page, 'Export');
    await page.waitForSelector('[data-testid="export-link"]', { timeout: 60_000 });
    const status = await page.$eval('[data-testid="export-status"]', (el) => el.textContent ?? '');
    const href = await page.$eval('[data-testid="export-link"]', (a) => (a as Dom).href as string);
    const rows = parseCsv(await (await fetch(href)).text());

    expect(status).toMatch(/^Ready: 60 points, /);
    expect(rows[0]).toEqual(['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload']);
    expect(rows.slice(1).map((r) => r[2])).toEqual(Array(60).fill('climate'));
    expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(3);
    await screenshot(page, '12-data-export');
  });

  it('sets the workspace’s data retention in Settings, shown on the workspace, and back to forever', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/settings`);
    await waitForText(page, 'Data points are kept forever.');
    await fill(page, 'retention-days', '30');
    await clickText(page, 'Save retention');
    await confirmDialog(page); // forever to 30 days is a cut
    await waitForText(page, 'Data points are kept 30 days after their device time');
    const shown = async () =>
      ((await (await api(`/workspaces/${state.workspaceId}`, state.apiKey!)).json()) as { workspace: { data_retention_days?: number } }).workspace
        .data_retention_days;
    expect(await shown()).toBe(30);
    await screenshot(page, '12-settings-retention');

    await fill(page, 'retention-days', '');
    await clickText(page, 'Save retention');
    await waitForText(page, 'Data points are kept forever.');
    expect(await shown()).toBeUndefined();
  });

  it('shows the workspace’s limits and its usage of each day, charted', async () => {
    await clickText(page, 'Usage', 'a');
    await waitForText(page, 'Usage per day (UTC)');
    expect(await hashOf()).toBe(`#/w/${state.workspaceId}/usage`);
    await page.waitForSelector('[data-testid="limits"] [data-limit="devices"]');
    expect(await page.$eval('[data-testid="limits"] [data-limit="devices"]', (el) => el.textContent)).toBe('3 of 10,000'); // with its use (issue 33)
    expect(await page.$eval('[data-testid="limits"] [data-limit="points_per_device_per_day"]', (el) => el.textContent)).toBe('100,000');

    // the 40 points of the first device and the 60 of the three: counted as their batches were stored
    const received = () => page.$eval('[data-testid="usage-totals"] [data-counter="points_in"]', (el) => el.textContent).catch(() => '');
    await until(async () => {
      if ((await received()) === '100') return true;
      await clickText(page, 'Refresh');
      return false;
    }, 'the 100 points in the usage');
    expect(await page.$eval('[data-testid="usage-totals"] [data-counter="points_refused"]', (el) => el.textContent)).toBe('0');
    expect(
      Number((await page.$eval('[data-testid="usage-totals"] [data-counter="webhook_deliveries"]', (el) => el.textContent))?.replace(/,/g, '')),
    ).toBeGreaterThan(0);

    // a chart per kind of usage, each over the 30 days, today's point drawn on its canvas
    const charts = await page.$$eval('[data-testid^="usage-chart-"]', (els) =>
      els.map((el) => [el.getAttribute('data-testid'), el.getAttribute('data-days'), el.getAttribute('aria-label')]),
    );
    expect(charts).toEqual([
      ['usage-chart-points_in', '30', expect.stringContaining('received 100, stored 100, refused 0')],
      ['usage-chart-api_requests', '30', expect.stringMatching(/^API requests per day: requests \d+$/)],
      ['usage-chart-webhook_deliveries', '30', expect.stringMatching(/^Webhook POSTs per day: delivered \d+, failed \d+$/)],
    ]);
    await page.waitForSelector('[data-testid="usage-chart-points_in"] canvas');
    await screenshot(page, '13-usage');
  });

  describe('fleet operations', () => {
    // a fleet of four devices with their credentials, made over the API: they answer from the test
    const staged: { id: string; credentials: { devinfo: { device_id: string; key_id: string }; prvkey: string } }[] = [];
    const fleetOps: { rolloutUrl?: string; fotaRollout?: string; fleetId?: string } = {};
    const read = async <T>(path: string) => (await (await api(path, state.apiKey!)).json()) as T;

    beforeAll(async () => {
      const { fleet } = (await (
        await api(`/workspaces/${state.workspaceId}/fleets`, state.apiKey!, { method: 'POST', body: JSON.stringify({ name: 'staged' }) })
      ).json()) as { fleet: { id: string } };
      fleetOps.fleetId = fleet.id;
      for (let i = 0; i < 4; i++) {
        const { device } = (await (
          await api(`/workspaces/${state.workspaceId}/devices`, state.apiKey!, {
            method: 'POST',
            body: JSON.stringify({ name: `staged-${i}`, fleet_id: fleet.id }),
          })
        ).json()) as { device: { id: string } };
        const { credentials } = (await (
          await api(`/workspaces/${state.workspaceId}/devices/${device.id}/identities`, state.apiKey!, { method: 'POST', body: '{"type":"sym"}' })
        ).json()) as {
          credentials: (typeof staged)[number]['credentials'];
        };
        staged.push({ id: device.id, credentials });
      }
    }, 120_000);

    it('checks the rollout settings as they are typed, then schedules a rate-limited job that opens its rollout', async () => {
      await page.goto(`${consoleUrl}#/w/${state.workspaceId}/jobs`);
      await chooseFleet('staged');
      await fill(page, 'job-name', 'flash');
      await fill(page, 'job-value', '{"image": "v2"}');
      await fill(page, 'rollout-max-per-minute', '0');
      await fill(page, 'rollout-abort-percentage', '150');
      await waitForText(page, 'Must be at most 100.');
      expect(await bodyText(page)).toContain('Must be at least 1.');
      // the abort rule wants both of its numbers
      expect(await bodyText(page)).toContain('give both, or neither');
      const scheduleDisabled = () =>
        page.$$eval('button[type="submit"]', (b) => b.filter((x) => x.textContent === 'Schedule job').every((x) => (x as Dom).disabled));
      expect(await scheduleDisabled()).toBe(true);

      await fill(page, 'rollout-max-per-minute', '2');
      await fill(page, 'rollout-timeout', '3600');
      await fill(page, 'rollout-abort-percentage', '60');
      await fill(page, 'rollout-abort-min-finished', '10');
      await until(async () => !(await scheduleDisabled()), 'the form accepted');
      await clickText(page, 'Schedule job');
      await confirmDialog(page);
      await until(async () => (await hashOf()).includes('/rollouts/rol-'), 'the rollout page');
      fleetOps.rolloutUrl = page.url();

      // two released at once, two queued for the next minute
      await until(async () => (await countsOnPage()).total === 4, 'the four devices counted');
      expect(await countsOnPage()).toMatchObject({ total: 4, pending: 2, queued: 2 });
      expect(await page.$eval('[data-testid="rollout-status"]', (el) => el.textContent)).toBe('in progress');
      expect(await page.$eval('[data-testid="rollout-settings"]', (el) => el.textContent)).toBe(
        'at most 2 devices released a minute; each device times out 1 h after its release; aborts once at least 10 devices have ended and 60 % of them failed or timed out',
      );
      // the next release (a minute after the first, from the API's next_release_at) and the ETA of the last
      const rollout = (
        await read<{ rollout: { created_at: string; next_release_at: string } }>(
          `/workspaces/${state.workspaceId}/rollouts/${fleetOps.rolloutUrl.split('/').at(-1)}`,
        )
      ).rollout;
      expect(Date.parse(rollout.next_release_at) - Date.parse(rollout.created_at)).toBe(60_000);
      // times in the console's zone (the browser's here), as the console prints them
      const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
      const releaseTime = formatIso(rollout.next_release_at, zone);
      const endTime = formatIso(new Date(Date.parse(rollout.next_release_at) + 3_600_000).toISOString(), zone);
      expect(await page.$eval('[data-testid="rollout-next-release"]', (el) => el.textContent)).toMatch(
        new RegExp(`^${escapeRegExp(releaseTime)} \\(in (\\d+ s|1 min)\\): 2 devices$`),
      );
      expect(await page.$eval('[data-testid="rollout-eta"]', (el) => el.textContent)).toMatch(
        new RegExp(
          `^every queued device \\(2\\) released by ${escapeRegExp(releaseTime)} \\(in (\\d+ s|1 min), 1 release\\); every device ended by ${escapeRegExp(endTime)} at the latest \\(its timeout\\)$`,
        ),
      );
    }, 120_000);

    it('shows the counts move as the devices answer, and the failed device with its error', async () => {
      const released = [];
      for (const device of staged) {
        const { job } = await read<{ job: { status: string } }>(`/devices/${device.id}/jobs/flash`);
        if (job.status === 'pending') released.push(device);
      }
      expect(released).toHaveLength(2);
      const [good, bad] = released;
      expect((await deviceClient(stack.base_url, await deviceToken(good.credentials)).post('/jobs/flash/result', { result: { written: true } })).status).toBe(
        200,
      );
      // the live layer's rollout message makes the page read the rollout again: no reload, no click
      expect(await page.$eval('[data-testid="rollout-live"]', (el) => el.textContent)).toContain('follow the rollout');
      await until(async () => (await countsOnPage()).done === 1, 'the done device counted on the page');
      expect(
        (await deviceClient(stack.base_url, await deviceToken(bad.credentials)).post('/jobs/flash/result', { result: { error: 'flash write failed' } })).status,
      ).toBe(200);
      // and at once on a refresh (what a pushed count calls), counts and devices together
      await refreshUntil(async () => (await countsOnPage()).failed === 1, 'the failed device counted on the page');
      expect(await countsOnPage()).toMatchObject({ total: 4, queued: 2, pending: 0, done: 1, failed: 1 });
      expect(await page.$eval('[role="progressbar"]', (el) => [el.getAttribute('aria-valuenow'), el.getAttribute('aria-valuemax')])).toEqual(['2', '4']);
      expect(await page.$eval('[data-testid="rollout-progress"]', (el) => el.textContent)).toBe(
        '2 of 4 devices ended: 1 done, 1 failed, 0 timed out, 0 canceled.',
      );

      // the failed devices are listed first, with what they reported (read with those counts)
      await until(
        async () =>
          ((await page.$eval('[data-testid="rollout-devices"]', (el) => (el as Dom).innerText as string).catch(() => '')) as string).includes(
            'flash write failed',
          ),
        'the failed device listed',
      );
      // the list starts on the devices that ended badly, each by its name
      expect(await page.$eval('select[name="rollout-device-status"]', (el) => (el as Dom).value)).toBe('bad');
      const rows = await page.$$eval('[data-testid="rollout-devices"] tbody tr', (trs) =>
        trs.map((tr) => [tr.getAttribute('data-device'), (tr as Dom).innerText as string]),
      );
      expect(rows).toHaveLength(1);
      expect(rows[0][0]).toBe(bad.id);
      expect(rows[0][1]).toMatch(/^staged-\d\s+failed\s/);
      expect(rows[0][1]).not.toContain(bad.id);
      await screenshot(page, '14-rollout-live');
    }, 120_000);

    it('pauses, resumes and cancels the rollout, whose queued devices are then canceled', async () => {
      const status = () => page.$eval('[data-testid="rollout-status"]', (el) => el.textContent);
      await clickText(page, 'Pause');
      await until(async () => (await status()) === 'paused', 'the rollout paused');
      expect(await page.$eval('[data-testid="rollout-next-release"]', (el) => el.textContent)).toBe('none while paused: 2 devices wait');
      expect(await page.$('[data-testid="rollout-eta"]')).toBeNull();
      expect(
        (await read<{ rollout: { status: string } }>(`/workspaces/${state.workspaceId}/rollouts/${fleetOps.rolloutUrl!.split('/').at(-1)}`)).rollout.status,
      ).toBe('paused');
      // what does not apply is not offered
      expect(await page.$('::-p-xpath(//button[normalize-space(.)="Pause"])')).toBeNull();

      await clickText(page, 'Resume');
      await until(async () => (await status()) === 'in progress', 'the rollout resumed');
      await clickText(page, 'Cancel rollout');
      await until(async () => (await status()) === 'canceled', 'the rollout canceled');
      // the sweep cancels the two queued devices; the page follows until the counts settle
      await refreshUntil(async () => (await countsOnPage()).canceled === 2, 'the queued devices canceled on the page');
      expect(await countsOnPage()).toMatchObject({ total: 4, queued: 0, pending: 0, done: 1, failed: 1, canceled: 2 });
      await waitForText(page, 'Final: these counts no longer change.');
      expect(await page.$('::-p-xpath(//button[normalize-space(.)="Cancel rollout"])')).toBeNull();
    }, 120_000);

    it('keeps the rollout across a reload, and lists it newest first', async () => {
      await page.reload();
      await until(async () => (await countsOnPage().catch(() => ({}) as Record<string, number>)).canceled === 2, 'the rollout after the reload');
      expect(await countsOnPage()).toMatchObject({ total: 4, done: 1, failed: 1, canceled: 2 });
      expect(page.url()).toBe(fleetOps.rolloutUrl);

      await clickText(page, '← All rollouts', 'a');
      await page.waitForSelector('[data-testid="rollouts"] tbody tr');
      const rows = await page.$$eval('[data-testid="rollouts"] tbody tr', (trs) => trs.map((tr) => (tr as Dom).innerText as string));
      // this one, then the first one on north
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatch(/Job flash\s+staged\s+canceled\s+4 of 4/);
      expect(rows[1]).toMatch(/Job update-config\s+north/);
      await screenshot(page, '15-rollouts');
    }, 120_000);

    it('uploads a firmware image with progress until it is ready, then schedules it on a fleet', async () => {
      const image = join(downloads, 'app-1.0.0.bin');
      writeFileSync(image, Buffer.alloc(300 * 1024, 'firmware image '));
      await page.goto(`${consoleUrl}#/w/${state.workspaceId}/firmware`);
      const input = await page.waitForSelector('input[name="firmware-file"]');
      await (input as unknown as { uploadFile: (path: string) => Promise<void> }).uploadFile(image);
      await fill(page, 'upload-firmware-id', 'app');
      await fill(page, 'upload-version', '1.0.0');
      await fill(page, 'upload-description', 'from the browser');
      // every state of the upload's progress bar, as the page drew it
      await page.evaluate(() => {
        const g = globalThis as Dom;
        g.uploadProgress = [];
        new g.MutationObserver(() => {
          const bar = g.document.querySelector('form[aria-labelledby="upload-h"] progress[max]');
          if (bar) g.uploadProgress.push([bar.value, bar.max]);
        }).observe(g.document.body, { subtree: true, childList: true, attributes: true });
      });
      await clickText(page, 'Upload firmware');
      await waitForText(page, /app 1\.0\.0 is ready: its image is stored \(300\.0 KB, SHA-256 [0-9a-f]{12}…\)/);
      const progress = (await page.evaluate(() => (globalThis as Dom).uploadProgress)) as [number, number][];
      // the bar went up to the file's size, never down
      expect(progress).toContainEqual([300 * 1024, 300 * 1024]);
      expect(progress.every(([sent], i) => i === 0 || sent >= progress[i - 1][0])).toBe(true);
      await until(
        async () => (await page.$eval('[data-firmware="app 1.0.0"] [data-testid="firmware-status"]', (el) => el.textContent).catch(() => '')) === 'ready',
        'the version listed ready',
      );
      const { firmware } = await read<{ firmware: { status: string; sha256: string; size: number } }>(
        `/workspaces/${state.workspaceId}/firmwares/app/versions/1.0.0`,
      );
      expect(firmware).toMatchObject({ status: 'ready', size: 300 * 1024, sha256: createHash('sha256').update(readFileSync(image)).digest('hex') });
      await screenshot(page, '16-firmware');

      // the FOTA form offers the ready version
      await clickText(page, 'Schedule it as a FOTA', 'a');
      await chooseFleet('staged');
      await until(
        async () =>
          (await page.$eval('select[name="firmware"]', (el) => (el as Dom).selectedOptions[0]?.textContent as string)) === 'app 1.0.0 — from the browser',
        'the ready version chosen',
      );
      await clickText(page, 'Schedule FOTA');
      await confirmDialog(page);
      await until(
        async () => (await hashOf()).includes('/rollouts/rol-') && (await bodyText(page)).includes('Rollout: FOTA app 1.0.0'),
        'the FOTA rollout page',
      );
      await until(async () => (await countsOnPage()).total === 4, 'the FOTA’s devices counted');
      expect(await countsOnPage()).toMatchObject({ pending: 4 });

      // a device downloads, then fails its check: its message is listed
      const device = deviceClient(stack.base_url, await deviceToken(staged[3].credentials));
      const { body: status } = await device.get('/status');
      expect(status.fota.value).toMatchObject({ firmware_id: 'app', fw_version: '1.0.0', sha256: firmware.sha256, size: 300 * 1024 });
      expect((await device.post('/fota/result', { status: 'in_progress', message: 'downloading' })).status).toBe(200);
      await refreshUntil(async () => (await countsOnPage()).in_progress === 1, 'the device in progress on the page');
      expect((await device.post('/fota/result', { status: 'failed', message: 'checksum mismatch after download' })).status).toBe(200);
      await refreshUntil(
        async () =>
          ((await page.$eval('[data-testid="rollout-devices"]', (el) => (el as Dom).innerText as string).catch(() => '')) as string).includes(
            'checksum mismatch after download',
          ),
        'the failed device’s message',
      );
      expect(await countsOnPage()).toMatchObject({ total: 4, pending: 3, in_progress: 0, failed: 1 });
      await screenshot(page, '17-fota-rollout');
    }, 120_000);

    it('says in words that a rollout which ended meanwhile can no longer be paused', async () => {
      const rolloutId = (await hashOf()).split('/').at(-1)!;
      // the page reads nothing while its tab is hidden: it still shows the rollout in progress
      const setHidden = (hidden: boolean) =>
        page.evaluate((value) => {
          const d = (globalThis as Dom).document;
          if (value) Object.defineProperty(d, 'hidden', { value: true, configurable: true });
          else delete d.hidden;
          d.dispatchEvent(new (globalThis as Dom).Event('visibilitychange'));
        }, hidden);
      await setHidden(true);
      try {
        // a refresh the page began before it was hidden must be shown before the cancel, or it shows the cancel
        // (the page's own state: a request canceled by an earlier reload may never be reported to the test as ended)
        await page.waitForSelector('[data-testid="rollout-view"][aria-busy="false"]');
        const canceled = await api(`/workspaces/${state.workspaceId}/rollouts/${rolloutId}/cancel`, state.apiKey!, { method: 'POST' });
        expect(canceled.status).toBe(200);
        expect(await page.$eval('[data-testid="rollout-status"]', (el) => el.textContent)).toBe('in progress');

        await clickText(page, 'Pause');
        await waitForAlert(page, /has ended.*\n.*can no longer be paused, resumed or canceled/s);
        // and shows it as it is
        await until(async () => (await page.$eval('[data-testid="rollout-status"]', (el) => el.textContent)) === 'canceled', 'the rollout shown canceled');
      } finally {
        // shown again, it reads at once
        await setHidden(false);
      }
      await refreshUntil(async () => (await countsOnPage()).canceled === 3, 'the pending devices canceled by the sweep, read again once shown');
      await screenshot(page, '17-fota-rollout-conflict');
    }, 120_000);

    it('shows why a rollout aborted, its table following the counts and starting on the devices that ended badly, by name', async () => {
      // released 2 a minute, each with 20 s to answer; aborts once 2 have ended and half of them failed or timed out
      const { job } = (await (
        await api(`/workspaces/${state.workspaceId}/jobs/probe?fleet=${fleetOps.fleetId}`, state.apiKey!, {
          method: 'POST',
          body: JSON.stringify({ value: {}, rollout: { max_per_minute: 2, timeout_seconds: 20, abort: { failure_percentage: 50, min_finished: 2 } } }),
        })
      ).json()) as { job: { rollout_id: string } };
      await page.goto(`${consoleUrl}#/w/${state.workspaceId}/rollouts/${job.rollout_id}`);
      const table = () =>
        page
          .$$eval('[data-testid="rollout-devices"] tbody tr', (trs) => trs.map((tr) => [tr.getAttribute('data-device'), (tr as Dom).innerText as string]))
          .catch(() => [] as string[][]);
      const states = async () =>
        (await table())
          .map(([, text]) => text.split('\t')[1])
          .sort()
          .join();
      // nothing ended badly yet: every device, by name (never an ID)
      await until(async () => (await states()) === 'pending,pending,queued,queued', 'the four devices listed');
      expect(await page.$eval('select[name="rollout-device-status"]', (el) => (el as Dom).value)).toBe('all');
      expect((await table()).every(([id, text]) => text.startsWith('staged-') && !text.includes(id))).toBe(true);

      // a device answers: the table follows the counts (the total did not change), no reload
      const released: typeof staged = [];
      for (const device of staged)
        if ((await read<{ job: { status: string } }>(`/devices/${device.id}/jobs/probe`)).job.status === 'pending') released.push(device);
      expect(released).toHaveLength(2);
      expect((await deviceClient(stack.base_url, await deviceToken(released[0].credentials)).post('/jobs/probe/result', { result: { ok: true } })).status).toBe(
        200,
      );
      await refreshUntil(async () => (await states()) === 'done,pending,queued,queued', 'the done device in the table');
      // shown with the counts it was read with
      expect(await countsOnPage()).toMatchObject({ total: 4, done: 1, pending: 1, queued: 2 });

      // the other times out: the rule fires, and the sweep cancels the queued two
      await refreshUntil(async () => (await page.$('[data-testid="abort-reason"]')) !== null, 'the abort reason shown', 75_000);
      expect(await page.$eval('[data-testid="abort-reason"]', (el) => el.textContent)).toContain(
        "1 of the 2 devices that had ended failed or timed out (0 failed, 1 timed out: 50 %), reaching the abort rule's 50 % once at least 2 have ended.",
      );
      await refreshUntil(async () => (await countsOnPage()).canceled === 2, 'the queued devices canceled on the page');
      expect(await countsOnPage()).toMatchObject({ total: 4, done: 1, timed_out: 1, canceled: 2, queued: 0, pending: 0 });
      // the list moved to the devices that ended badly: the timed-out one first, then the canceled, as the counts say
      await refreshUntil(async () => (await states()) === 'canceled,canceled,timed out', 'the devices that ended badly listed');
      expect(await page.$eval('select[name="rollout-device-status"]', (el) => (el as Dom).value)).toBe('bad');
      const rows = await table();
      expect(rows[0][0]).toBe(released[1].id);
      expect(rows[0][1]).toMatch(/^staged-\d\s+timed out\s/);
      await screenshot(page, '18-rollout-aborted');
    }, 120_000);

    it('cancels a job and a FOTA on the device page, and shows how they ended', async () => {
      await page.goto(`${consoleUrl}#/w/${state.workspaceId}/devices/${state.deviceId}`);
      const jobState = (name: string) => page.$eval(`[data-job="${name}"] [data-testid="job-status"]`, (el) => el.textContent).catch(() => '');
      await until(async () => (await jobState('reboot')) === 'pending', 'the job pending on the device page');
      await (await page.waitForSelector('button[aria-label="Cancel job reboot"]'))!.click();
      await until(async () => (await jobState('reboot')) === 'canceled', 'the job canceled');
      expect(await page.$('button[aria-label="Cancel job reboot"]')).toBeNull();
      expect((await read<{ job: { status: string; completed_at?: string } }>(`/devices/${state.deviceId}/jobs/reboot`)).job).toMatchObject({
        status: 'canceled',
        completed_at: expect.any(String),
      });

      await waitForText(page, 'base 1.2.0: pending');
      await clickText(page, 'Cancel FOTA');
      await until(
        async () => (await page.$eval('[data-testid="device-fota"]', (el) => el.textContent ?? '')).includes('base 1.2.0: canceled'),
        'the FOTA canceled',
      );
      expect((await read<{ fota: { status: string } }>(`/devices/${state.deviceId}/fota`)).fota.status).toBe('canceled');

      // the states filter reads the API's ?status=
      await page.select('select[name="jobs-status"]', 'canceled');
      await until(
        async () => (await page.$$eval('[data-testid="device-jobs"] tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-job')))).join() === 'reboot',
        'only the canceled job listed',
      );
      await screenshot(page, '18-device-states');
    }, 120_000);
  });

  it('keeps every page within a 1,280-pixel window with 128-character names, each cut with its full text on hover', async () => {
    // a workspace, a fleet and a device named with 128 characters and no space to break at, a rollout on the fleet, and points of the device
    const long = (prefix: string) => `${prefix}${'x'.repeat(128 - prefix.length)}`;
    const names = { workspace: long('workspace-'), fleet: long('fleet-'), device: long('device-') };
    const post = async <T>(path: string, body: unknown) => (await (await api(path, state.apiKey!, { method: 'POST', body: JSON.stringify(body) })).json()) as T;
    const { workspace } = await post<{ workspace: { id: string } }>('/workspaces', { name: names.workspace });
    const { fleet } = await post<{ fleet: { id: string } }>(`/workspaces/${state.workspaceId}/fleets`, { name: names.fleet });
    const { device } = await post<{ device: { id: string } }>(`/workspaces/${state.workspaceId}/devices`, { name: names.device, fleet_id: fleet.id });
    const { job } = await post<{ job: { rollout_id: string } }>(`/workspaces/${state.workspaceId}/jobs/long-names?fleet=${fleet.id}`, { value: {} });
    const { credentials } = await post<{ credentials: NonNullable<typeof state.credentials> }>(
      `/workspaces/${state.workspaceId}/devices/${device.id}/identities`,
      { type: 'sym' },
    );
    const points = Array.from({ length: 5 }, (_, i) => ({ tag: 'long', timestamp_device: new Date(Date.now() - i * 60_000).toISOString(), payload: { v: i } }));
    expect((await deviceClient(stack.base_url, await deviceToken(credentials)).post('/data', points)).status).toBe(202);

    await page.setViewport({ width: 1280, height: 900 });
    const ws = `#/w/${state.workspaceId}`;
    // each page, what it shows of the long names (the header's workspace picker is on every page)
    const pages: Array<[string, string[], () => Promise<unknown>]> = [
      ['#/workspaces', [names.workspace], () => waitForText(page, 'New workspace')],
      [`${ws}/devices`, [names.fleet], () => page.waitForSelector(`[role="row"] a[title="${names.device}"]`)],
      [`${ws}/devices/${device.id}`, [names.device, names.fleet], () => page.waitForSelector('[data-testid="connection"]')],
      [`${ws}/jobs`, [names.fleet], () => page.waitForSelector('input[name="target-fleet"]')],
      [`${ws}/rollouts`, [names.fleet], () => page.waitForSelector('[data-testid="rollouts"]')],
      [`${ws}/rollouts/${job.rollout_id}`, [names.fleet, names.device], () => page.waitForSelector('[data-testid="rollout-devices"]')],
      [`${ws}/firmware`, [], () => waitForText(page, 'Upload firmware')],
      [
        `${ws}/data`,
        [],
        async () => {
          await fill(page, 'query-devices', device.id);
          await until(async () => {
            if ((await page.$eval('[data-testid="result-summary"]', (el) => el.textContent).catch(() => ''))?.includes('5 points')) return true;
            await clickText(page, 'Run query');
            return false;
          }, 'the long-named device’s points charted');
        },
      ],
      [`${ws}/integrations`, [], () => waitForText(page, 'New webhook')],
      [`${ws}/usage`, [], () => waitForText(page, 'Usage per day (UTC)')],
      [`${ws}/settings`, [], () => waitForText(page, 'Settings: API keys')],
      [`#/w/${workspace.id}/devices`, [names.workspace], () => waitForText(page, 'New fleet')],
    ];
    for (const [i, [hash, shown, ready]] of pages.entries()) {
      await page.goto(`${consoleUrl}${hash}`);
      // the header read the workspaces when the console loaded: read them again, with the new one
      if (i === 0) await page.reload();
      await ready();
      for (const name of shown) await page.waitForSelector(`.name[title^="${name}"]`);
      await page.waitForSelector(`select[aria-label="Workspace"] option[title="${names.workspace}"]`);
      const seen = await page.evaluate(
        (cut, workspaceName) => {
          const d = (globalThis as Dom).document;
          return {
            width: d.documentElement.scrollWidth as number,
            // each long name shown on the page: cut (narrower than its text), its whole text in its title (a device's with its ID)
            cut: cut.map((name: string) =>
              [...d.querySelectorAll('.name')].some((el: Dom) => el.textContent === name && el.title.startsWith(name) && el.scrollWidth > el.clientWidth),
            ),
            // the header's workspace picker, capped, names the long workspace in full on hover
            picker: [...d.querySelectorAll('select[aria-label="Workspace"] option')].some((o: Dom) => o.title === workspaceName),
          };
        },
        shown,
        names.workspace,
      );
      expect({ hash, widerThanTheWindow: seen.width > 1280 ? seen.width : false }).toEqual({ hash, widerThanTheWindow: false });
      expect({ hash, cut: seen.cut, picker: seen.picker }).toEqual({ hash, cut: shown.map(() => true), picker: true });
    }
    // the chart's legend names the device, cut so that its tag and field stay in view, and whole in its tooltip
    await page.goto(`${consoleUrl}${ws}/data`);
    await fill(page, 'query-devices', device.id);
    await clickText(page, 'Run query');
    await page.waitForSelector('[data-testid="chart"] .u-legend .u-series:nth-child(2)');
    // the ID stands in until the names are read
    await until(
      async () => !(await page.$eval('[data-testid="chart"] .u-legend .u-series:nth-child(2) .u-label', (el) => el.textContent))?.startsWith('dev-'),
      'the device’s name in the legend',
    );
    expect(
      await page.$eval('[data-testid="chart"] .u-legend .u-series:nth-child(2)', (el) => [el.querySelector('.u-label')!.textContent, el.getAttribute('title')]),
    ).toEqual([`${names.device.slice(0, 39)}… · long · v`, `Device ${names.device} (${device.id}), tag long, field v`]);
    await screenshot(page, '19-long-names');
  }, 180_000);

  it('revokes the API key, which then stops working', async () => {
    await page.goto(`${consoleUrl}#/w/${state.workspaceId}/settings`);
    await (await page.waitForSelector('button[aria-label="Revoke API key from-the-browser"]'))!.click();
    await confirmDialog(page);
    await until(async () => !(await page.$('button[aria-label="Revoke API key from-the-browser"]')), 'the key revoked on the page');
    await until(async () => (await api('/workspaces', state.apiKey!)).status === 401, 'the revoked key refused');
  });

  it('signs out, and back in with the keyboard alone', async () => {
    await clickText(page, 'Sign out');
    await waitForText(page, 'Sign in');
    expect(await page.evaluate(() => (globalThis as Dom).localStorage.getItem('fleetstream.session'))).toBeNull();
    await page.focus('[name="email"]');
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await waitForText(page, 'Browser workspace');
  });

  it('went through every step above under the deployed Content-Security-Policy, which nothing broke', async () => {
    const index = await fetch(consoleUrl);
    const html = await index.text();

    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'; style-src 'self'");
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    // The build needs nothing inline: every script has a source, no style element or attribute.
    expect(html.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
    expect(html).not.toMatch(/<style|\sstyle=/);
    expect(cspViolations).toEqual([]);
  });
});
