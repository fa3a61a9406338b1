/**
 * Issue 33, items 1 and 4, in Chromium on npm start: the Overview is the home after sign-in and
 * shows the workspace's device counts and firmware spread; a device's page shows its latest value
 * of each tag with a sparkline, its last data time, its firmware and its event timeline, and links
 * to its data on the Data page. Devices are seeded through the store (the API is rate-limited) and
 * one through the API and the device door.
 */
import { jest } from '@jest/globals';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'puppeteer-core';
import { until } from '../../local/ports';
import { runtimeFilePath, type RuntimeFile } from '../../local/runtime-file';
import { putAll } from '../../lambdas/stores/items';
import { deviceKey } from '../../lambdas/stores/keys';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { BROWSER_WAIT_MS, clickText, fill, launchChromium, ownWorkspace, type SharedStack, screenshot, sharedStack, waitForText } from '../helpers/browser';
import { deviceClient, deviceToken } from '../helpers/device-token';

jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let ws: string;
let api: ApiClient;
let browser: Browser;
let page: Page;
let consoleUrl: string;
let deviceId: string;

const hashOf = () => page.evaluate(() => (globalThis as Dom).location.hash as string);
const textOf = (selector: string) => page.$eval(selector, (el) => (el as Dom).textContent.trim() as string).catch(() => '');

beforeAll(async () => {
  stack = sharedStack();
  ws = await ownWorkspace(stack, 'Overview');
  consoleUrl = stack.console_url;
  api = apiClient(stack.base_url, stack.api_key);
  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

describe('the overview and a device’s health in Chromium', () => {
  it('seeds a workspace: four devices through the store, one that sends data and installs a firmware', async () => {
    const north = (await api.post(`/workspaces/${ws}/fleets`, { name: 'north', description: '' })).body.fleet;
    const { env } = JSON.parse(readFileSync(runtimeFilePath(stack.dataDir, Number(new URL(stack.base_url).port)), 'utf8')) as RuntimeFile;
    const client = new DynamoDBClient({
      endpoint: env.AWS_ENDPOINT_URL_DYNAMODB,
      region: env.AWS_REGION,
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
    });
    const db = { doc: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }), table: env.REGISTRY_TABLE };
    const seeded = (i: number) => {
      const id = `dev-seeded${String(i).padStart(13, '0')}`;
      return {
        ...deviceKey(ws, id),
        id,
        name: `seeded-${i}`,
        account_id: stack.account_id,
        workspace_id: ws,
        fleet_id: north.id,
        phys_id: '',
        created_at: new Date().toISOString(),
        connected: i < 2,
        ...(i < 2 ? { firmware_version: '1.0', last_seen_at: new Date().toISOString() } : {}),
      };
    };
    await putAll(db, [0, 1, 2, 3].map(seeded), 4);
    db.doc.destroy();

    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'thermo' })).body.device;
    deviceId = device.id;
    const { credentials } = (await api.post(`/workspaces/${ws}/devices/${deviceId}/identities`)).body;
    const me = deviceClient(stack.base_url, await deviceToken(credentials));
    const at = (s: number) => new Date(Date.now() - (60 - s) * 1000).toISOString();
    expect(
      (
        await me.post(
          '/data',
          [1, 2, 3, 4, 5].map((s) => ({ tag: 'env', payload: { temp: 20 + s }, timestamp_device: at(s) })),
        )
      ).status,
    ).toBe(202);
    expect((await me.post('/data', { tag: 'status', payload: { msg: 'ok' }, timestamp_device: at(6) })).status).toBe(202);
    expect((await api.post(`/devices/${deviceId}/fota/app/versions/2.0`)).status).toBe(200);
    expect((await me.post('/fota/result', { status: 'done', firmware_version: '2.0' })).status).toBe(200);
    await until(async () => {
      const d = (await api.get(`/workspaces/${ws}/devices/${deviceId}`)).body.device;
      return d.firmware_version === '2.0' && d.last_seen_at !== null;
    }, 'the device’s firmware and last data');
    // A desired interval it has not reported: not yet compliant.
    expect((await api.call('PATCH', `/workspaces/${ws}/devices/${deviceId}/state`, { desired: { interval: 60 } })).status).toBe(200);
  });

  it('signs in to the Overview, with the device counts and the firmware spread', async () => {
    await page.goto(consoleUrl);
    await fill(page, 'email', stack.user_email);
    await fill(page, 'password', stack.user_password);
    await clickText(page, 'Sign in');
    // the home of the account's first workspace, then this file's own
    await until(async () => (await hashOf()) === `#/w/${stack.workspace_id}/overview`, 'the overview as the home');
    await page.goto(`${consoleUrl}#/w/${ws}/overview`);
    await until(async () => (await textOf('[data-count="devices"]')) === '5', 'five devices counted');
    expect(await textOf('[data-count="online"]')).toBe('2');
    expect(await textOf('[data-count="offline"]')).toBe('3');
    const spread = await page.$$eval('[data-testid="overview-firmware"] tbody tr', (rows) =>
      rows.map((r) => [...(r as Dom).querySelectorAll('td')].map((td: Dom) => td.textContent.trim()).join(' ')),
    );
    expect(spread).toEqual(['1.0 2', 'unknown 2', '2.0 1']);
    const fleets = await page.$$eval('[data-testid="overview-fleets"] tbody tr', (rows) =>
      rows.map((r) =>
        [...(r as Dom).querySelectorAll('td')]
          .map((td: Dom) => td.textContent.trim())
          .slice(0, 3)
          .join(' '),
      ),
    );
    expect(fleets).toEqual(expect.arrayContaining(['default 1 0', 'north 4 2']));
    await waitForText(page, 'None: every webhook’s last delivery succeeded.');
    expect(await textOf('[data-testid="overview-non-compliant"]')).toBe('1 device has not reported a desired key yet:');
    expect(await textOf('li[data-key="interval"]')).toBe('interval on 1 device');
    await screenshot(page, 'overview');
  });

  it('shows a device’s latest values with sparklines, last data, firmware and its timeline, and opens its data', async () => {
    await page.goto(`${consoleUrl}#/w/${ws}/devices/${deviceId}`);
    await until(async () => (await textOf('[data-testid="firmware"]')) === '2.0', 'the firmware shown');
    expect(await textOf('[data-testid="last-seen"]')).not.toBe('—');
    await page.waitForSelector('[data-testid="latest-values"] tr[data-tag="env"]');
    expect(await textOf('[data-testid="latest-values"] tr[data-tag="env"] code')).toBe('{"temp":25}');
    expect(await textOf('[data-testid="latest-values"] tr[data-tag="status"] code')).toBe('{"msg":"ok"}');
    expect(
      await page.$eval('[data-testid="latest-values"] tr[data-tag="env"] svg.sparkline polyline', (el) => (el as Dom).getAttribute('points').split(' ').length),
    ).toBe(5);
    await until(async () => (await textOf('[data-testid="timeline"]')).includes('FOTA app 2.0: done'), 'the FOTA in the timeline');
    await screenshot(page, 'device-health');

    await clickText(page, 'See this device’s data', 'a');
    await until(async () => (await hashOf()) === `#/w/${ws}/data/${deviceId}`, 'the data page of the device');
    // the device is chosen in the Data page's picker, by name
    await page.waitForSelector(`[data-testid="picked"][data-id="${deviceId}"]`);
    await until(async () => (await textOf('[data-testid="picked"]')).includes('thermo'), 'the device’s name in the picker');
  });
});
