/**
 * Issue 36, item 6, in Chromium on npm start: the Alarms page lists an open alarm by its device's
 * name, acknowledging it in place says who did, transitions pushed live show without a reload
 * (the page and the navigation's count), and the rule editor shows the API's 400 at its field and
 * previews the devices a target reaches. Alarms are opened by conditions sent on the device API
 * under a `condition` rule of `for_seconds` 0.
 */
import { jest } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { until } from '../../local/ports';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { BROWSER_WAIT_MS, clickText, fill, launchChromium, ownWorkspace, type SharedStack, sharedStack, waitForText } from '../helpers/browser';
import { deviceClient, deviceToken } from '../helpers/device-token';

jest.setTimeout(2 * BROWSER_WAIT_MS);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let ws: string;
let api: ApiClient;
let browser: Browser;
let page: Page;
const ids: Record<string, string> = {};
const doors: Record<string, ReturnType<typeof deviceClient>> = {};

const textOf = (selector: string) => page.$eval(selector, (el) => (el as Dom).textContent.trim() as string).catch(() => '');
const openAlarms = async () => (await api.get(`/workspaces/${ws}/alarms?status=open`)).body.alarms as Array<{ id: string; device_id: string }>;

/**
 * Opens a `door` condition on a device until its alarm is open: the rule is watched within its
 * cache's 10 s, so a condition opened before then opens none, and another is opened every 12 s.
 */
const openDoorAlarm = async (device: string) => {
  const opened = async () => (await openAlarms()).some((a) => a.device_id === ids[device]);
  for (let n = 1; n <= 6 && !(await opened()); n++) {
    expect((await doors[device].post('/conditions', { uuid: `${device}-door-${n}`, tag: 'door' })).status).toBeLessThan(300);
    await until(opened, `the alarm of ${device}`, 12_000).catch(() => undefined);
  }
  expect(await opened()).toBe(true);
};

beforeAll(async () => {
  stack = sharedStack();
  ws = await ownWorkspace(stack, 'Alarms');
  api = apiClient(stack.base_url, stack.api_key);
  const cold = (await api.post(`/workspaces/${ws}/fleets`, { name: 'cold rooms', description: '' })).body.fleet.id;
  for (const name of ['freezer-1', 'freezer-2']) {
    ids[name] = (await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: cold })).body.device.id;
    const { credentials } = (await api.post(`/workspaces/${ws}/devices/${ids[name]}/identities`)).body;
    doors[name] = deviceClient(stack.base_url, await deviceToken(credentials));
  }
  ids.elsewhere = (await api.post(`/workspaces/${ws}/devices`, { name: 'elsewhere' })).body.device.id;
  const rule = await api.post(`/workspaces/${ws}/alarm-rules`, {
    name: 'door open',
    kind: 'condition',
    severity: 'critical',
    tag: 'door',
    target: { fleets: [cold] },
  });
  expect(rule.status).toBe(201);
  await openDoorAlarm('freezer-1');

  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  await page.goto(stack.console_url);
  await fill(page, 'email', stack.user_email);
  await fill(page, 'password', stack.user_password);
  await clickText(page, 'Sign in');
  await waitForText(page, 'Sign out');
}, 150_000);

afterAll(async () => {
  await browser?.close();
});

describe('the Alarms page', () => {
  it('lists the open alarm by its device’s name, linked to its page, and the navigation counts it', async () => {
    await page.goto(`${stack.console_url}#/w/${ws}/alarms`);
    await page.waitForSelector('[data-testid="alarms"] tr[data-status="open"]');

    const row = await page.$eval('[data-testid="alarms"] tr[data-status="open"]', (tr) => ({
      text: (tr as Dom).innerText as string,
      link: (tr as Dom).querySelector('[data-testid="alarm-device"]').getAttribute('href') as string,
    }));
    expect(row.text).toContain('door open');
    expect(row.text).toContain('critical');
    expect(row.text).toContain('freezer-1');
    expect(row.text).not.toContain(ids['freezer-1']);
    expect(row.link).toBe(`#/w/${ws}/devices/${ids['freezer-1']}`);
    await until(async () => (await textOf('[data-testid="nav-alarm-count"]')) === '1', 'the navigation’s count of 1');
  });

  it('acknowledges it in place with a note, saying who did; the navigation’s count goes', async () => {
    await page.evaluate(() => ((globalThis as Dom).notReloaded = true));
    await clickText(page, 'Acknowledge');
    await fill(page, 'ack-note', 'door was open, closing it');
    await page.click('form[aria-label^="Acknowledge"] button[type="submit"]');

    await page.waitForSelector('[data-testid="alarms"] tr[data-status="acknowledged"]');
    const cell = await textOf('[data-testid="alarms"] tr[data-status="acknowledged"] [data-testid="alarm-acknowledged"]');
    expect(cell).toContain(`by ${stack.user_email}`);
    expect(cell).toContain('door was open, closing it');
    await until(async () => (await page.$('[data-testid="nav-alarm-count"]')) === null, 'no open alarm counted');
    expect(await page.evaluate(() => (globalThis as Dom).notReloaded)).toBe(true);
  });

  it('shows transitions as they are pushed, with no reload: an alarm opening, another closing', async () => {
    await page.evaluate(() => ((globalThis as Dom).notReloaded = true));
    // freezer-2's door opens: a second alarm, open, counted in the navigation
    await openDoorAlarm('freezer-2');
    await until(async () => (await textOf('[data-testid="nav-alarm-count"]')) === '1', 'the new alarm counted');
    await page.waitForSelector('[data-testid="alarms"] tr[data-status="open"]');
    expect(await textOf('[data-testid="alarms"] tr[data-status="open"] [data-testid="alarm-device"]')).toBe('freezer-2');
    // freezer-1's door closes: its acknowledged alarm closes
    const first = (await api.get(`/workspaces/${ws}/conditions?device=${ids['freezer-1']}&status=open`)).body.conditions as Array<{ uuid: string }>;
    for (const c of first) expect((await doors['freezer-1'].post('/conditions', { uuid: c.uuid })).status).toBeLessThan(300);
    await page.waitForSelector('[data-testid="alarms"] tr[data-status="closed"]');

    expect(await textOf('[data-testid="alarms"] tr[data-status="closed"] [data-testid="alarm-device"]')).toBe('freezer-1');
    expect(await page.evaluate(() => (globalThis as Dom).notReloaded)).toBe(true);
  });

  it('refuses an offline rule of 30 s with the API’s error at the field, creating nothing', async () => {
    await clickText(page, 'New rule');
    await fill(page, 'rule-name', 'gone quiet');
    await page.select('select[name="rule-kind"]', 'offline');
    await fill(page, 'rule-for-seconds', '30');
    await clickText(page, 'Create the rule');

    await page.waitForSelector('[data-testid="rule-error-for_seconds"]');
    expect(await textOf('[data-testid="rule-error-for_seconds"]')).toBe('Must be at least 60 for an offline rule.');
    expect(await page.$eval('[name="rule-for-seconds"]', (el) => (el as Dom).getAttribute('aria-invalid'))).toBe('true');
    expect((await api.get(`/workspaces/${ws}/alarm-rules`)).body.alarm_rules.map((r: { name: string }) => r.name)).toEqual(['door open']);
  });

  it('previews the devices a target reaches: a fleet chosen by name', async () => {
    await page.type('[name="rule-fleets"]', 'cold');
    await page.waitForSelector('[role="option"][data-id]');
    await page.keyboard.press('Enter');
    await clickText(page, 'Preview the devices');

    await page.waitForSelector('[data-testid="rule-preview"]');
    expect(await page.$eval('[data-testid="rule-preview"]', (el) => (el as Dom).getAttribute('data-count'))).toBe('2');
    expect(await textOf('[data-testid="rule-preview"]')).toBe('2 devices now: freezer-1, freezer-2');
  });
});
