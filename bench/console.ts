/**
 * `npm run bench:console`: the console in Debian's Chromium on `npm start`.
 *
 * - First load: time to interactive (navigation start → the sign-in form in the page) and the JS
 *   it fetched, raw and gzipped (the ≤ 200 KB gzipped budget of issue 12).
 * - Device list: 10,000 devices against 100, side by side: from opening the page to the rows drawn,
 *   and a re-sort.
 * - Chart: 175,000 points against 1,750 of 4 devices: from "Run query" to the chart drawn (parse,
 *   column extraction, uPlot), and uPlot's own drawing time. The page reads the devices' names from
 *   the intercepted list (of 10,000 devices), by fleet, as it does from the API.
 *
 * - Live updates (issue 33): from a device disconnecting, and from a data point being published, to
 *   the open console showing it (the devices page's row, the device page's "New data"), p50/p95 over
 *   20 tries each; and the API requests an idle open console makes in a minute, beside the polling
 *   pages of before. Real: the device connects to the broker, the point goes through the ingest.
 *
 * Every time is measured in the page (performance.now()). The device list and the storage answers
 * are served to the page by request interception with generated data of the API's exact shape, so
 * the figures are the browser's work, not the registry's or the store's (their benchmarks are
 * bench/query.ts and bench/ingest.ts); sign-in, configuration and the console itself are real.
 *
 * Options: `-- --url <console URL> --email <e> --password <p>` measures a running console instead
 * of starting `npm start`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { HTTPRequest, Page } from 'puppeteer-core';
import { buildConsole, launchChromium } from '../test/helpers/browser';
import { startLocalStack } from '../test/helpers/local-stack';
import { measureLive, type LiveFigures } from './console-live';

type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- page callbacks: no DOM types in this project

const { values: args } = parseArgs({ options: { url: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' } } });
const RUNS = 3;
// tsx compiles with esbuild's keepNames, which wraps named functions in `__name(…)`: the callbacks
// sent to the page need that helper there too.
const KEEP_NAMES = 'globalThis.__name = (f) => f';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number) => `${x.toFixed(0)} ms`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const progress = (line: string) => process.stderr.write(`bench:console: ${line}\n`);

buildConsole();
const stack = args.url ? undefined : await startLocalStack({}, ['--in-memory']);
const ready = stack as unknown as { console_url?: string; user_email?: string; user_password?: string; base_url: string } | undefined;
const consoleUrl = args.url ?? ready?.console_url ?? `${new URL(ready!.base_url).origin}/`;
const email = args.email ?? ready?.user_email;
const password = args.password ?? ready?.user_password;
if (!email || !password)
  throw new Error('No console user: npm start prints one on its READY line (user_email, user_password), or pass --email and --password.');

const browser = await launchChromium();
try {
  // ---- first load
  const dist = join('console', 'dist', 'assets');
  // What the first load fetches: the scripts index.html names (the live updates' mqtt chunk comes later, by dynamic import).
  const index = readFileSync(join('console', 'dist', 'index.html'), 'utf8');
  const allJs = readdirSync(dist).filter((f) => f.endsWith('.js'));
  const jsFiles = allJs.filter((f) => index.includes(`/assets/${f}`));
  const lazyFiles = allJs.filter((f) => !jsFiles.includes(f));
  const jsRaw = jsFiles.reduce((n, f) => n + readFileSync(join(dist, f)).length, 0);
  const jsGzip = jsFiles.reduce((n, f) => n + gzipSync(readFileSync(join(dist, f)), { level: 9 }).length, 0);
  const lazyGzip = lazyFiles.reduce((n, f) => n + gzipSync(readFileSync(join(dist, f)), { level: 9 }).length, 0);
  progress(`first load, ${RUNS} cold loads…`);
  const loads: number[] = [];
  let fetchedJs = 0;
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.createBrowserContext(); // a cold cache each time
    const page = await context.newPage();
    const cdp = await page.createCDPSession();
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const scripts = new Set<string>();
    let bytes = 0;
    cdp.on('Network.responseReceived', (e) => e.type === 'Script' && scripts.add(e.requestId));
    cdp.on('Network.loadingFinished', (e) => scripts.has(e.requestId) && (bytes += e.encodedDataLength));
    await page.evaluateOnNewDocument(KEEP_NAMES);
    // the moment the sign-in form is in the page, seen by the page itself
    await page.evaluateOnNewDocument(() => {
      const g = globalThis as Dom;
      new g.MutationObserver((_: unknown, observer: Dom) => {
        if (g.document.querySelector('[name=email]')) {
          g.__interactive = g.performance.now();
          observer.disconnect();
        }
      }).observe(g.document, { childList: true, subtree: true });
    });
    await page.goto(consoleUrl, { waitUntil: 'load' });
    await page.waitForFunction(() => (globalThis as Dom).__interactive !== undefined);
    loads.push(await page.evaluate(() => (globalThis as Dom).__interactive as number));
    fetchedJs = bytes;
    await context.close();
  }

  // ---- signed in, for the two pages
  const page = await browser.newPage();
  await page.evaluateOnNewDocument(KEEP_NAMES);
  await page.setViewport({ width: 1400, height: 1000 });
  await page.goto(consoleUrl);
  await page.waitForSelector('[name=email]');
  await page.type('[name=email]', email);
  await page.type('[name=password]', password);
  await page.click('button[type=submit]');
  await page.waitForSelector('select[aria-label="Workspace"] option:nth-child(2)');
  const workspaceId = await page.$eval('select[aria-label="Workspace"] option:nth-child(2)', (o) => (o as Dom).value as string);

  progress('live updates (20 disconnects, 20 points, an idle minute)…');
  // ---- live updates, before any request is intercepted (npm start only: it needs a device and the key)
  const live: LiveFigures | undefined =
    stack && ready ? await measureLive(page, ready as unknown as Parameters<typeof measureLive>[1], workspaceId) : undefined;

  let devices: ReturnType<typeof makeDevices> = [];
  let records: unknown[] = [];
  await page.setRequestInterception(true);
  page.on('request', (request: HTTPRequest) => {
    const url = new URL(request.url());
    if (request.method() === 'GET' && url.pathname.endsWith(`/workspaces/${workspaceId}/devices`)) {
      // ?fleet=…, as the API answers it (the Data page reads its chart's device names by fleet)
      const fleets = url.searchParams.getAll('fleet');
      const answer = fleets.length ? devices.filter((d) => fleets.includes(d.fleet_id)) : devices;
      void request.respond({ status: 200, contentType: 'application/json', body: JSON.stringify({ devices: answer }) });
    } else if (request.method() === 'GET' && url.pathname.endsWith(`/timeseries/${workspaceId}/data`)) {
      void request.respond({ status: 200, contentType: 'application/json', body: JSON.stringify({ result: records }) });
    } else void request.continue();
  });

  const deviceList = async (count: number) => {
    devices = makeDevices(workspaceId, count);
    const open: number[] = [];
    const sort: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      await page.evaluate(() => ((globalThis as Dom).location.hash = '#/workspaces'));
      await page.waitForSelector('[name=workspace-name]');
      open.push(await timeInPage(page, `#/w/${workspaceId}/devices`, `${count} of ${count} devices`, '[data-testid="device-count"]'));
      sort.push(await timeSort(page));
    }
    return { open: median(open), sort: median(sort) };
  };
  progress('device list, 100 and 10,000 devices…');
  const small = await deviceList(100);
  const large = await deviceList(10_000);

  const chart = async (count: number) => {
    records = makeRecords(count, devices);
    const total: number[] = [];
    const drawn: number[] = [];
    const rendered: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      await page.evaluate((hash) => ((globalThis as Dom).location.hash = hash), `#/w/${workspaceId}/data`);
      await page.waitForSelector('[name=query-size]');
      await page.$eval('[name=query-size]', (el) => ((el as Dom).value = ''));
      await page.type('[name=query-size]', String(count));
      const [elapsed, render, draw] = await explainedAfter(page, 120_000, `the chart of ${count} points drawn`, () =>
        page.evaluate(
          (points) =>
            new Promise<[number, number, number]>((resolve) => {
              const g = globalThis as Dom;
              g.performance.clearMarks();
              const started = g.performance.now();
              [...g.document.querySelectorAll('button')].find((b: Dom) => b.textContent === 'Run query').click();
              const check = () => {
                const box = g.document.querySelector('[data-testid="chart"]');
                const summary = g.document.querySelector('[data-testid="result-summary"]')?.textContent ?? '';
                const match = /drawn in (\d+) ms/.exec(summary);
                if (box?.querySelector('canvas') && box.getAttribute('data-points') === String(points * 2) && match) {
                  const received = g.performance.getEntriesByName('fleetstream:data-received').at(-1).startTime;
                  const drawn = g.performance.getEntriesByName('fleetstream:chart-drawn').at(-1).startTime;
                  resolve([g.performance.now() - started, drawn - received, Number(match[1])]);
                } else g.requestAnimationFrame(check);
              };
              check();
            }),
          count,
        ),
      );
      total.push(elapsed);
      rendered.push(render);
      drawn.push(draw);
      await page.evaluate(() => ((globalThis as Dom).location.hash = '#/workspaces'));
    }
    return { total: median(total), rendered: median(rendered), drawn: median(drawn) };
  };
  progress('chart, 1,750 and 175,000 points…');
  const fewPoints = await chart(1_750);
  const manyPoints = await chart(175_000);

  const lines = [
    `first load (${RUNS} cold loads, median): time to interactive ${ms(median(loads))}; JS ${kb(jsRaw)} raw, ${kb(jsGzip)} gzipped (budget 200 KB); fetched ${kb(fetchedJs)} (npm start serves it uncompressed); loaded later: ${kb(lazyGzip)} gzipped (${lazyFiles.length} chunk(s): the live updates' mqtt client)`,
    ...(live ? live.lines : ['live updates: not measured (--url: no device to drive)']),
    `device list, open to rows drawn: 100 devices ${ms(small.open)}, 10,000 devices ${ms(large.open)} (ratio ${(large.open / small.open).toFixed(1)}); re-sort: ${ms(small.sort)} vs ${ms(large.sort)} (ratio ${(large.sort / small.sort).toFixed(1)})`,
    `chart (2 numeric fields per point), answer received to chart painted: 1,750 points ${ms(fewPoints.rendered)}, 175,000 points ${ms(manyPoints.rendered)} (ratio ${(manyPoints.rendered / fewPoints.rendered).toFixed(1)}); of which uPlot ${ms(fewPoints.drawn)} vs ${ms(manyPoints.drawn)}; Run query to painted, with the intercepted answer's delivery: ${ms(fewPoints.total)} vs ${ms(manyPoints.total)}`,
  ];
  console.log(lines.join('\n'));
} finally {
  await browser.close();
  await stack?.stop();
}

/**
 * `wait()`, or after `ms` an error that says what the page shows instead (the chart's summary and
 * attributes, any error box): a page that changed under the benchmark says how.
 */
async function explainedAfter<T>(page: Page, ms: number, what: string, wait: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(async () => {
      const shown = await page
        .evaluate(() => {
          const g = globalThis as Dom;
          const chart = g.document.querySelector('[data-testid="chart"]');
          return JSON.stringify({
            summary: g.document.querySelector('[data-testid="result-summary"]')?.textContent,
            chart: chart && { points: chart.getAttribute('data-points'), canvas: Boolean(chart.querySelector('canvas')) },
            errors: [...g.document.querySelectorAll('[role="alert"]')].map((e: Dom) => e.textContent),
          });
        })
        .catch((error: Error) => `(the page did not answer: ${error.message})`);
      reject(new Error(`${what}: not within ${ms / 1000} s; the page shows ${shown}`));
    }, ms);
  });
  try {
    return await Promise.race([wait(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Sets the hash and times, in the page, until `selector` shows `text`. */
async function timeInPage(page: Page, hash: string, text: string, selector: string) {
  return page.evaluate(
    (h, t, s) =>
      new Promise<number>((resolve) => {
        const g = globalThis as Dom;
        const started = g.performance.now();
        g.location.hash = h;
        const check = () => {
          const el = g.document.querySelector(s);
          if (el?.textContent?.includes(t) && g.document.querySelectorAll('[aria-label="Devices"] [role="row"]').length > 1)
            resolve(g.performance.now() - started);
          else g.requestAnimationFrame(check);
        };
        check();
      }),
    hash,
    text,
    selector,
  );
}

/** Clicks the Name header and times until the first row changes. */
async function timeSort(page: Page) {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const g = globalThis as Dom;
        const first = () => g.document.querySelectorAll('[aria-label="Devices"] [role="row"]')[1]?.textContent;
        const before = first();
        const started = g.performance.now();
        [...g.document.querySelectorAll('[role="columnheader"] button')].find((b: Dom) => b.textContent.startsWith('Name')).click();
        const check = () => (first() !== before ? resolve(g.performance.now() - started) : g.requestAnimationFrame(check));
        check();
      }),
  );
}

function makeDevices(workspaceId: string, count: number) {
  const created = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: count }, (_, i) => ({
    id: `dev-${i.toString(36).padStart(20, '0')}`,
    name: `sensor ${(i * 7919) % count}`,
    account_id: 'acc-bench',
    fleet_id: `flt-${(i % 10).toString().padStart(20, '0')}`,
    fleet_name: `fleet ${i % 10}`,
    workspace_id: workspaceId,
    workspace_name: 'bench',
    created_at: new Date(created + i * 1000).toISOString(),
    phys_id: '',
    identities: null,
    connected: i % 3 === 0,
    last_connected_at: i % 2 ? new Date(created + i * 5000).toISOString() : null,
    last_disconnected_at: null,
    manifest: null,
  }));
}

/** Points of 4 of the devices, each at its own times (every series has a null at the others' x). */
function makeRecords(count: number, devices: ReturnType<typeof makeDevices>) {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: count }, (_, i) => ({
    timestamp_device: new Date(start + i * 1000).toISOString(),
    timestamp_in: new Date(start + i * 1000 + 50).toISOString(),
    fleet_id: devices[i % 4].fleet_id,
    device_id: devices[i % 4].id,
    tag: 'weather',
    payload: { temp: 20 + Math.sin(i / 500) * 5, humidity: 50 + (i % 100) / 10 },
  }));
}
