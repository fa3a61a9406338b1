/**
 * The live updates' part of `npm run bench:console` (issue 33): from a device disconnecting, and
 * from a data point being published, to the open console showing it, p50/p95 over 20 tries each,
 * and the API requests an idle open console makes in a minute. The device is real (MQTT to the
 * broker), the point goes through the topic rule, the ingest queue and the ingest; the console's
 * moment is taken in the page (a MutationObserver, epoch ms), the device's in this process.
 */
import type { HTTPRequest, Page } from 'puppeteer-core';
import { until } from '../local/ports';
import { connectDevice, type Credentials } from '../test/helpers/mqtt-device';

type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- page callbacks: no DOM types in this project

const TRIES = 20;
const IDLE_MS = 60_000;
const TARGET_P95_MS = 5_000;

export interface LiveFigures {
  lines: string[];
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];
const s = (msValue: number) => `${(msValue / 1000).toFixed(2)} s`;

/** Watches, in the page, for an element of `selector` holding `holding` to match `pattern`; resolves with the epoch ms it first did. */
const watch = (page: Page, selector: string, pattern: string, holding = '') =>
  page.evaluate(
    (sel, pat, has) =>
      new Promise<number>((resolve) => {
        const g = globalThis as Dom;
        const re = new RegExp(pat);
        const check = () => {
          const found = [...g.document.querySelectorAll(sel)].some((el: Dom) => el.innerText.includes(has) && re.test(el.innerText));
          if (found) {
            observer.disconnect();
            resolve(g.performance.timeOrigin + g.performance.now());
            return true;
          }
          return false;
        };
        const observer = new g.MutationObserver(check);
        observer.observe(g.document.body, { childList: true, subtree: true, characterData: true });
        check();
      }),
    selector,
    pattern,
    holding,
  );

const ROWS = '[aria-label="Devices"] [role="row"]';

export const measureLive = async (page: Page, ready: { base_url: string; api_key: string; mqtt_url: string }, workspaceId: string): Promise<LiveFigures> => {
  const call = async (path: string, init: RequestInit = {}) =>
    (await (await fetch(`${ready.base_url}${path}`, { ...init, headers: { 'content-type': 'application/json', 'x-api-key': ready.api_key } })).json()) as any;
  const name = `bench-live-${Date.now()}`;
  const created = await call(`/workspaces/${workspaceId}/devices`, { method: 'POST', body: JSON.stringify({ name }) });
  const deviceId = created.device.id as string;
  const credentials = (await call(`/workspaces/${workspaceId}/devices/${deviceId}/identities`, { method: 'POST' })).credentials as Credentials;
  const go = (hash: string) => page.evaluate((h) => ((globalThis as Dom).location.hash = h), hash);
  const liveShown = () =>
    until(async () => (await page.$eval('[data-testid="live-state"]', (el) => (el as Dom).innerText).catch(() => '')) === 'Live', 'Live', 30_000);

  // ---- disconnect → the devices page's row says offline
  await go(`#/w/${workspaceId}/devices`);
  await page.waitForSelector('[name=device-search]');
  await page.type('[name=device-search]', name); // the one row in view
  await liveShown();
  const disconnects: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const device = await connectDevice(credentials, { url: ready.mqtt_url });
    await watch(page, ROWS, 'connected', name);
    const seen = watch(page, ROWS, 'offline', name);
    const t0 = Date.now();
    await device.end();
    disconnects.push((await seen) - t0);
  }

  process.stderr.write('bench:console: live: a point → the device page…\n');
  // ---- a point → the device page's "New data"
  const device = await connectDevice(credentials, { url: ready.mqtt_url });
  await go(`#/w/${workspaceId}/devices/${deviceId}`);
  await page.waitForSelector('[data-testid="new-data"]');
  await liveShown();
  const points: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const seen = watch(page, '[data-testid="new-data"]', `^${i + 1} points? since`);
    const t0 = Date.now();
    await device.data('temp', { value: i });
    points.push((await seen) - t0);
  }
  await device.end();

  // ---- an idle open console: the devices page, live, for a minute
  await go(`#/w/${workspaceId}/devices`);
  await liveShown();
  const origin = new URL(ready.base_url).origin;
  let requests = 0;
  const count = (request: HTTPRequest) => void (request.url().startsWith(`${origin}/v3/`) && (requests += 1));
  page.on('request', count);
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS)); // a benchmark's fixed window, not a wait for a condition
  page.off('request', count);
  const perMinute = (requests * 60_000) / IDLE_MS;

  const figure = (label: string, xs: number[]) =>
    `${label}: p50 ${s(percentile(xs, 50))}, p95 ${s(percentile(xs, 95))}, max ${s(Math.max(...xs))} (${xs.length} tries; target p95 ≤ ${s(TARGET_P95_MS)})`;
  return {
    lines: [
      `${figure('live: device disconnect → devices page shows offline', disconnects)}; before: shown only after Refresh`,
      `${figure('live: data point published → device page shows it', points)}; before: not shown (the data page after a new query)`,
      `live: idle open console (devices page, live), API requests: ${perMinute.toFixed(1)}/min (target ≤ 2); before: that page 0/min but blind to changes, the rollout page 30/min (every 2 s) plus its device table's`,
    ],
  };
};
