/**
 * The Data page in Chromium on npm start (issue 33, items 3, 5 and 6), with the browser in
 * America/Chicago: a device picked by typing part of its name, a relative range, the chart's axes
 * (one per field), its legend at a hovered time (every series), and the console's time zone
 * switched to UTC (the chart's time axis and the table's times both follow).
 */
import { jest } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { until } from '../../local/ports';
import { BROWSER_WAIT_MS, clickText, fill, launchChromium, ownWorkspace, type SharedStack, screenshot, sharedStack, waitForText } from '../helpers/browser';
import { deviceClient, deviceToken } from '../helpers/device-token';

jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let workspaceId: string;
let browser: Browser;
let page: Page;
let boiler: string;

const api = async (path: string, body?: unknown) => {
  const response = await fetch(`${stack.base_url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': stack.api_key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, Dom>;
};

/** A device with an identity, publishing `points` over the device API. */
const publishingDevice = async (name: string, points: { tag: string; timestamp_device: string; payload: unknown }[]) => {
  const { device } = await api(`/workspaces/${workspaceId}/devices`, { name });
  const { credentials } = await api(`/workspaces/${workspaceId}/devices/${device.id}/identities`, { type: 'sym' });
  const published = await deviceClient(stack.base_url, await deviceToken(credentials)).post('/data', points);
  expect(published.status).toBe(202);
  return device.id as string;
};

const chartData = (name: string) => page.$eval('[data-testid="chart"]', (el, key) => (el as Dom).dataset[key as string] as string, name);
const firstRow = () => page.$eval('[aria-label="Data points"] [role="row"][aria-rowindex="2"]', (r) => (r as Dom).innerText as string).catch(() => '');

beforeAll(async () => {
  stack = sharedStack();
  workspaceId = await ownWorkspace(stack, 'Data page');
  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  // the browser's zone: the console's until another is chosen
  await page.emulateTimezone('America/Chicago');

  const now = Date.now();
  // a point a minute for the last half hour: a temperature (20–23) and an uptime in the thousands
  boiler = await publishingDevice(
    'Boiler east',
    Array.from({ length: 30 }, (_, i) => ({
      tag: 'climate',
      timestamp_device: new Date(now - (30 - i) * 60_000).toISOString(),
      payload: { temp: 20 + (i % 4), uptime_s: 5000 + i * 60 },
    })),
  );
  await publishingDevice('Chiller west', [{ tag: 'climate', timestamp_device: new Date(now - 60_000).toISOString(), payload: { temp: 5 } }]);
}, 150_000);

afterAll(async () => {
  await browser?.close();
});

describe('the Data page', () => {
  it('picks a device by typing part of its name, and queries the last hour', async () => {
    const consoleUrl = stack.console_url;
    await page.goto(consoleUrl);
    await fill(page, 'email', stack.user_email);
    await fill(page, 'password', stack.user_password);
    await clickText(page, 'Sign in');
    await waitForText(page, 'Sign out');
    await page.goto(`${consoleUrl}#/w/${workspaceId}/data`);

    // type-ahead: part of the name lists the device (a combobox's listbox), Enter chooses it
    await page.waitForSelector('input[name="query-devices"][role="combobox"]');
    await page.type('input[name="query-devices"]', 'boil');
    await page.waitForSelector('[role="listbox"] [role="option"]', { visible: true });
    const options = await page.$$eval('[role="listbox"] [role="option"]', (els) => els.map((el) => (el as Dom).innerText as string));
    expect(options).toHaveLength(1);
    expect(options[0]).toContain('Boiler east');
    expect(await page.$eval('input[name="query-devices"]', (el) => el.getAttribute('aria-expanded'))).toBe('true');
    await page.keyboard.press('Enter');
    await page.waitForSelector(`[data-testid="picked"][data-id="${boiler}"]`);
    expect(await page.$eval('[data-testid="picked"]', (el) => (el as Dom).innerText as string)).toContain('Boiler east');

    await page.select('select[name="query-range"]', '1h');
    await clickText(page, 'Run query');
    // storage queries are eventually consistent: run again until the 30 points are there
    await until(async () => {
      const summary = await page.$eval('[data-testid="result-summary"]', (el) => el.textContent).catch(() => '');
      if (summary?.includes('30 points')) return true;
      await clickText(page, 'Run query');
      return false;
    }, 'the 30 points of Boiler east');
    expect(await page.$eval('[data-testid="result-summary"]', (el) => el.textContent)).toContain('2 numeric series');
    // names in the table, the device time in the browser's zone with its abbreviation
    await until(async () => /Boiler east/.test(await firstRow()), 'the device name in the table');
    expect(await firstRow()).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} C[SD]T/);
    expect(await firstRow()).not.toMatch(/\dZ\b/);
  });

  it('draws temp and uptime_s (ranges 100× apart) on two axes, the time axis in the zone', async () => {
    await page.waitForSelector('[data-testid="chart"] canvas');
    expect(await chartData('axes')).toBe('2');
    expect((await chartData('axisLabels')).split('|').sort()).toEqual(['temp', 'uptime_s']);
    expect(await chartData('xLabel')).toMatch(/^Time \(America\/Chicago, C[SD]T\)$/);
    await screenshot(page, 'data-page-chicago');
  });

  it('lists every series at the hovered time in the legend, with min, max and mean', async () => {
    // the middle of the plot (hover scrolls it into view)
    await (await page.waitForSelector('[data-testid="chart"] .u-over'))!.hover();
    const values = () => page.$$eval('[data-testid="chart"] .u-legend .u-series .u-value', (els) => els.map((el) => (el as Dom).textContent as string));
    await until(async () => /C[SD]T$/.test((await values())[0] ?? ''), 'the hovered time in the legend');
    const [time, ...series] = await values();

    expect(time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} C[SD]T$/);
    expect(series).toHaveLength(2);
    for (const value of series) expect(value).toMatch(/^-?[\d.]+( \(at .*\))? · min [\d.]+ · max [\d.]+ · mean [\d.]+$/);
    expect(series.find((v) => v.includes('min 20 '))).toContain('max 23');
    expect(series.find((v) => v.includes('min 5000'))).toContain('max 6740');
  });

  it('shows the chart’s time axis and the table’s times in UTC once UTC is chosen, and keeps the choice', async () => {
    const chicagoTicks = await chartData('xTicks');
    const chicagoRow = await firstRow();
    await page.select('select[name="time-zone"]', 'UTC');

    await until(async () => (await chartData('zone')) === 'UTC', 'the chart redrawn in UTC');
    await until(async () => (await chartData('xTicks')) !== '', 'the UTC ticks');
    expect(await chartData('xLabel')).toBe('Time (UTC)');
    expect(await chartData('xTicks')).not.toBe(chicagoTicks);
    await until(async () => / UTC/.test(await firstRow()), 'the table in UTC');
    const utcRow = await firstRow();
    expect(utcRow).not.toBe(chicagoRow);
    // the same moment, five or six hours later on the clock
    const clock = (row: string) => /(\d\d):(\d\d):\d\d\.\d{3}/.exec(row)!.slice(1).map(Number);
    const [h1, m1] = clock(chicagoRow);
    const [h2, m2] = clock(utcRow);
    expect(m2).toBe(m1);
    expect([5, 6]).toContain((h2 - h1 + 24) % 24);
    expect(await page.evaluate(() => (globalThis as Dom).localStorage.getItem('fleetstream.timeZone'))).toBe('UTC');
    await screenshot(page, 'data-page-utc');

    // kept across a reload
    await page.reload();
    await page.waitForSelector('select[name="time-zone"]');
    expect(await page.$eval('select[name="time-zone"]', (el) => (el as Dom).value as string)).toBe('UTC');
  });
});
