import { jest } from '@jest/globals';
import mqtt from 'mqtt';
import type { Browser, CDPSession, Page } from 'puppeteer-core';
import { until } from '../../local/ports';
import { BROWSER_WAIT_MS, clickText, fill, launchChromium, ownWorkspace, type SharedStack, screenshot, sharedStack, waitForText } from '../helpers/browser';
import { cognitoClient } from '../helpers/cognito';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';

// The console's live updates in Chromium on npm start (issue 33 item 2): what a device does shows
// on the open pages without a reload, and a lost live connection is shown and recovered.

jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let ws: string;
let browser: Browser;
let page: Page;
let cdp: CDPSession;
const devices: MqttDevice[] = [];
const cspViolations: string[] = [];
/** The MQTT client IDs the page's WebSocket connections sent in their CONNECT. */
const consoleClientIds: string[] = [];
const deviceName = `live-${Date.now()}`;
let device: { id: string; credentials: Credentials };

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.base_url}${path}`, { ...init, headers: { 'content-type': 'application/json', 'x-api-key': stack.api_key } }).then(
    async (r) => (await r.json()) as any,
  );

const go = (hash: string) => page.evaluate((h) => ((globalThis as Dom).location.hash = h), hash);

/** The devices table's row of the device, as a person reads it. */
const rowText = () =>
  page.$$eval(
    '[aria-label="Devices"] [role="row"]',
    (rows, name) => (rows.find((r) => (r as Dom).innerText.includes(name)) as Dom)?.innerText ?? '',
    deviceName,
  );

const liveLabel = () => page.$eval('[data-testid="live-state"]', (el) => (el as Dom).innerText as string).catch(() => '');

beforeAll(async () => {
  stack = sharedStack();
  ws = await ownWorkspace(stack, 'Live');
  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  await page.exposeFunction('reportCspViolation', (line: string) => void cspViolations.push(line));
  await page.evaluateOnNewDocument(() => {
    const g = globalThis as Dom;
    g.document.addEventListener('securitypolicyviolation', (e: Dom) => g.reportCspViolation(`${e.violatedDirective} refused ${e.blockedURI}`));
    // every state the header's live indicator showed, in order
    g.__liveStates = [];
    new g.MutationObserver(() => {
      const text = g.document.querySelector('[data-testid="live-state"]')?.innerText;
      if (text && g.__liveStates.at(-1) !== text) g.__liveStates.push(text);
    }).observe(g.document, { childList: true, subtree: true, characterData: true });
  });
  cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  cdp.on('Network.webSocketFrameSent', (e) => {
    const id = /console-[0-9a-f]{24}/.exec(Buffer.from(e.response.payloadData, 'base64').toString('latin1'))?.[0];
    if (id) consoleClientIds.push(id);
  });
  const created = await api(`/workspaces/${ws}/devices`, { method: 'POST', body: JSON.stringify({ name: deviceName }) });
  const identity = await api(`/workspaces/${ws}/devices/${created.device.id}/identities`, { method: 'POST' });
  device = { id: created.device.id, credentials: identity.credentials };
}, 150_000);

afterAll(async () => {
  for (const d of devices) d.client.end(true);
  await browser?.close();
});

describe('the console’s live updates in Chromium', () => {
  it('shows a device going online and offline on the devices page without a reload', async () => {
    await page.goto(stack.console_url);
    await fill(page, 'email', stack.user_email);
    await fill(page, 'password', stack.user_password);
    await clickText(page, 'Sign in');
    await waitForText(page, 'Sign out');
    await go(`#/w/${ws}/devices`);
    await until(async () => (await rowText()).includes('offline'), 'the device listed offline');
    await until(async () => (await liveLabel()) === 'Live', 'the header to say Live');
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => frame === page.mainFrame() && navigations.push(frame.url()));

    const connected = await connectDevice(device.credentials, { url: stack.mqtt_url });
    devices.push(connected);
    await until(async () => (await rowText()).includes('connected'), 'the device shown connected');
    await screenshot(page, 'live-01-connected');
    await connected.end();
    await until(async () => (await rowText()).includes('offline'), 'the device shown offline');

    expect(navigations).toEqual([]);
  });

  it('counts the device online and offline on the Overview without a reload', async () => {
    await go(`#/w/${ws}/overview`);
    const count = (name: string) => page.$eval(`[data-count="${name}"]`, (el) => (el as Dom).textContent.trim() as string).catch(() => '');
    await until(async () => (await count('online')) === '0', 'no device online on the Overview');
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => frame === page.mainFrame() && navigations.push(frame.url()));

    const connected = await connectDevice(device.credentials, { url: stack.mqtt_url });
    devices.push(connected);
    await until(async () => (await count('online')) === '1', 'the device counted online');
    await connected.end();
    await until(async () => (await count('online')) === '0' && (await count('offline')) === '1', 'the device counted offline');
    expect(navigations).toEqual([]);
  });

  it('shows a point published on the device page and re-runs the data page’s query', async () => {
    const connected = await connectDevice(device.credentials, { url: stack.mqtt_url });
    devices.push(connected);
    await go(`#/w/${ws}/devices/${device.id}`);
    await waitForText(page, 'none since this page opened');
    await until(async () => (await liveLabel()) === 'Live', 'the header to say Live');

    await connected.data('temp', { value: 21.5 });
    await until(
      async () => /1 point since this page opened/.test(await page.$eval('[data-testid="new-data"]', (el) => (el as Dom).innerText as string)),
      'the new point on the device page',
    );
    await screenshot(page, 'live-02-device-data');

    await go(`#/w/${ws}/data`);
    await fill(page, 'query-devices', device.id);
    await clickText(page, 'Run query');
    await waitForText(page, /Page 1: 1 points/);
    await connected.data('temp', { value: 22.5 });
    await waitForText(page, /Page 1: 2 points/);
    await connected.end();
  });

  it('shows a lost live connection and recovers it, with the pages live again', async () => {
    await go(`#/w/${ws}/devices`);
    await until(async () => (await liveLabel()) === 'Live', 'the header to say Live');
    await page.evaluate(() => ((globalThis as Dom).__liveStates = []));
    const current = consoleClientIds.at(-1)!;
    // Another connection with the console's client ID takes over, as IoT Core closes the first one.
    const token = (await cognitoClient(stack.cognito_endpoint, stack.user_pool_client_id).signIn(stack.user_email, stack.user_password)).body
      .AuthenticationResult.AccessToken as string;
    const liveUrl = ((await (await fetch(new URL('/config.json', stack.console_url))).json()) as { liveUrl: string }).liveUrl;
    const intruder = mqtt.connect(liveUrl, { clientId: current, username: ws, password: token, protocolVersion: 4, reconnectPeriod: 0 });
    await new Promise<void>((resolve, reject) => intruder.once('connect', () => resolve()).once('error', reject));

    await until(
      async () => (await page.evaluate(() => (globalThis as Dom).__liveStates as string[])).includes('Live updates lost: reconnecting…'),
      'the header to show the lost connection',
    );
    await until(async () => (await liveLabel()) === 'Live', 'the header to say Live again');
    intruder.end(true);
    expect(consoleClientIds.at(-1)).not.toBe(current);

    const connected = await connectDevice(device.credentials, { url: stack.mqtt_url });
    devices.push(connected);
    await until(async () => (await rowText()).includes('connected'), 'the device shown connected after the recovery');
    await connected.end();
    await until(async () => (await rowText()).includes('offline'), 'the device shown offline after the recovery');
    expect(cspViolations).toEqual([]);
  });
});
