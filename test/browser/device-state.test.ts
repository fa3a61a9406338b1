/**
 * Issue 35's console (device state) in Chromium, signed in as npm start's first console user: a
 * device page shows desired, reported and the delta side by side and edits desired with its
 * version; a change made meanwhile (another client's PATCH) makes the save a conflict shown beside
 * the state read again, never an overwrite, until the person puts their change on the current
 * state and saves again; the Jobs page's fleet-wide form sets a desired state on a fleet after
 * confirming its count, opening the rollout (kind state) whose pending devices are who has not
 * applied it. Issue 36: the device page lists the device's conditions, the open ones first.
 */
import { jest } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { until } from '../../local/ports';
import {
  BROWSER_WAIT_MS,
  clickText,
  confirmDialog,
  fill,
  launchChromium,
  ownWorkspace,
  type SharedStack,
  screenshot,
  sharedStack,
  waitForText,
} from '../helpers/browser';
import { deviceClient, deviceToken } from '../helpers/device-token';

jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let browser: Browser;
let page: Page;
let ws: string;
let fleet: string;
const ids: Record<string, string> = {};

const api = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${stack.base_url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': stack.api_key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any };
};

const consoleAt = (path: string) => `${stack.console_url}#/w/${ws}/${path}`;
const hashOf = () => page.evaluate(() => (globalThis as Dom).location.hash as string);
const textOf = (selector: string) => page.$eval(selector, (el) => (el as Dom).innerText as string).catch(() => '');
const stateOf = async (device: string) => (await api('GET', `/workspaces/${ws}/devices/${device}/state`)).body.state;
/** The row of the desired editor holding `key`, by its index. */
const rowOf = (key: string) =>
  page.$$eval('[data-testid="desired-rows"] input[name^="desired-key-"]', (inputs, k) => inputs.findIndex((el) => (el as Dom).value === k), key);

beforeAll(async () => {
  stack = sharedStack();
  ws = await ownWorkspace(stack, 'Device state');
  fleet = (await api('POST', `/workspaces/${ws}/fleets`, { name: 'sensors' })).body.fleet.id;
  for (const name of ['sensor-1', 'sensor-2']) ids[name] = (await api('POST', `/workspaces/${ws}/devices`, { name, fleet_id: fleet })).body.device.id;

  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  page.on('dialog', (dialog) => void dialog.dismiss()); // the console asks with its own dialogs
  await page.goto(stack.console_url);
  await fill(page, 'email', stack.user_email);
  await fill(page, 'password', stack.user_password);
  await clickText(page, 'Sign in');
  await waitForText(page, 'Sign out');
}, 150_000);

afterAll(async () => {
  await browser?.close();
});

describe('device state in the console', () => {
  it('shows desired beside reported with the delta, and saves an edit of desired with its version', async () => {
    const device = ids['sensor-1'];
    expect((await api('PATCH', `/workspaces/${ws}/devices/${device}/state`, { desired: { interval: 30 } })).status).toBe(200);
    await page.goto(consoleAt(`devices/${device}`));
    await page.waitForSelector('tr[data-key="interval"]');
    // desired and not reported: the delta says it is not applied yet
    expect(await page.$eval('tr[data-key="interval"]', (el) => (el as Dom).dataset.standing)).toBe('pending');
    expect(await textOf('tr[data-key="interval"] [data-side="desired"]')).toMatch(/^30 set /);
    expect(await textOf('tr[data-key="interval"] [data-side="delta"]')).toBe('→ 30 (not applied yet)');
    expect(await textOf('[data-testid="state-version"]')).toBe('1');

    // a bare word is said next to its row, and nothing is sent while it is wrong
    await fill(page, `desired-value-${await rowOf('interval')}`, 'sixty');
    await page.waitForSelector('[data-testid="desired-error"]');
    expect(await textOf('[data-testid="desired-error"]')).toBe('Not JSON: text goes in quotes, "sixty".');
    await fill(page, `desired-value-${await rowOf('interval')}`, '60');
    await clickText(page, 'Add a desired key');
    await fill(page, 'desired-key-1', 'mode');
    await fill(page, 'desired-value-1', '"eco"');
    await clickText(page, 'Save desired state');
    await until(async () => (await textOf('[data-testid="state-version"]')) === '2', 'the saved version shown');
    await screenshot(page, 'state-01-device');

    expect(await stateOf(device)).toMatchObject({ desired: { interval: 60, mode: 'eco' }, version: 2, delta: { interval: 60, mode: 'eco' } });
    expect(await textOf('tr[data-key="mode"] [data-side="desired"]')).toMatch(/^"eco" set /);
  });

  it('shows a save over a stale version as a conflict with the state now, never overwriting it', async () => {
    const device = ids['sensor-1'];
    // another client changes the desired state while the page shows version 2
    expect((await api('PATCH', `/workspaces/${ws}/devices/${device}/state`, { desired: { mode: 'turbo' }, version: 2 })).status).toBe(200);
    await fill(page, `desired-value-${await rowOf('interval')}`, '90');
    await clickText(page, 'Save desired state');
    await page.waitForSelector('[data-testid="state-conflict"]', { visible: true });
    const said = await textOf('[data-testid="state-conflict"]');
    await screenshot(page, 'state-02-conflict');

    expect(said).toContain('Not saved: the desired state changed meanwhile (version 2 → 3). Nothing was overwritten.');
    expect(said).toMatch(/interval\s+60\s+90\s+60/);
    expect(said).toContain('Also changed meanwhile (kept as they are): mode.');
    // the table shows the state now; the server kept the other client's change and not ours
    await until(async () => (await textOf('[data-testid="state-version"]')) === '3', 'the state read again');
    expect(await textOf('tr[data-key="mode"] [data-side="desired"]')).toMatch(/^"turbo"/);
    expect(await stateOf(device)).toMatchObject({ desired: { interval: 60, mode: 'turbo' }, version: 3 });

    // put back on the current state, saved over version 3: both changes kept
    await clickText(page, 'Put my changes on the current state');
    await clickText(page, 'Save desired state');
    await until(async () => (await textOf('[data-testid="state-version"]')) === '4', 'the second save');
    expect(await page.$('[data-testid="state-conflict"]')).toBeNull();
    expect(await stateOf(device)).toMatchObject({ desired: { interval: 90, mode: 'turbo' }, version: 4 });
  });

  it('lists the device’s conditions on its page, the open ones first, with their durations', async () => {
    const device = ids['sensor-2'];
    const { credentials } = (await api('POST', `/workspaces/${ws}/devices/${device}/identities`)).body;
    const https = deviceClient(stack.base_url, await deviceToken(credentials));
    for (const body of [
      { uuid: 'c-old', tag: 'door', start: '2026-03-01T09:00:00Z' },
      { uuid: 'c-old', finish: '2026-03-01T09:05:30Z', finish_payload: { closed: true } },
      { uuid: 'c-open', tag: 'overheat', payload: { t: 9 }, start: '2026-03-01T08:00:00Z' },
    ]) {
      expect((await https.post('/conditions', body)).status).toBe(200);
    }

    await page.goto(consoleAt(`devices/${device}`));
    await page.waitForSelector('[data-testid="device-conditions"] tr[data-condition="c-old"]');
    const rows = await page.$$eval('[data-testid="device-conditions"] tbody tr', (trs) =>
      trs.map((tr) => [(tr as Dom).dataset.condition, (tr as Dom).dataset.status, (tr as Dom).innerText as string]),
    );
    await screenshot(page, 'conditions-01-device');

    // the open one first although it opened earlier
    expect(rows.map(([uuid, status]) => `${uuid}:${status}`)).toEqual(['c-open:open', 'c-old:closed']);
    expect(rows[0][2]).toMatch(/overheat\s+open/);
    expect(rows[0][2]).toContain('so far');
    expect(rows[1][2]).toContain('5 min 30 s');
    expect(rows[1][2]).toContain('{"closed":true}');
  });

  it('sets a desired state on a fleet from the Jobs page after confirming its count, and opens its rollout', async () => {
    await page.goto(consoleAt('jobs'));
    await page.waitForSelector(`input[name="target-fleet"][value="${fleet}"]`);
    await page.click(`input[name="target-fleet"][value="${fleet}"]`);
    await fill(page, 'state-desired', '{"interval": 120}');
    await until(async () => (await textOf('[data-testid="state-desired-check"]')) === 'Valid: sets interval.', 'the keys checked');
    await clickText(page, 'Set desired state');
    await page.waitForSelector('dialog[open]', { visible: true });
    await screenshot(page, 'state-03-fleet-confirm');
    const said = await confirmDialog(page);
    expect(said).toContain('Set desired state interval on 2 devices?');
    expect(said).toContain('This targets 2 devices: those in the fleet sensors now.');
    expect(said).toMatch(/counts as done once it reports them/);

    await until(async () => (await hashOf()).includes('/rollouts/rol-'), 'the rollout page');
    const rolloutId = (await hashOf()).split('/rollouts/')[1];
    await waitForText(page, 'Rollout: State interval');
    expect(await textOf('[data-testid="rollout-desired"]')).toContain('{"interval":120}');
    // neither device reports: both are pending, who has not applied it
    await until(async () => (await textOf('[data-count="pending"]')) === '2', 'both devices pending');
    expect(await page.$('[data-count="in_progress"]')).toBeNull();
    await page.select('select[name="rollout-device-status"]', 'pending');
    await until(async () => (await page.$$('[data-testid="rollout-devices"][data-filter="pending"] tbody tr')).length === 2, 'the pending devices listed');
    const listed = await textOf('[data-testid="rollout-devices"]');
    expect(listed).toContain('sensor-1');
    expect(listed).toContain('pending (not applied yet)');
    await screenshot(page, 'state-04-rollout');

    const rollout = (await api('GET', `/workspaces/${ws}/rollouts/${rolloutId}`)).body.rollout;
    expect(rollout).toMatchObject({ kind: 'state', desired: { interval: 120 }, total: 2 });
    expect((await stateOf(ids['sensor-2'])).desired).toEqual({ interval: 120 });
  });
});
