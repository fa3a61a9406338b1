import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { until, waitFor } from '../../local/ports';
import type { ReadyInfo } from './local-stack';

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

/** Debian's Chromium (`apt-get install chromium`, as `.ci/run` installs it), or CHROMIUM_PATH. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * How long a browser test waits for what a page should show: a bound that a loaded machine still
 * meets (the suite runs two workers on two cores beside Chromium), under the test's own timeout.
 */
export const BROWSER_WAIT_MS = 90_000;

/** The `npm start` that the browser project's global setup started for all its files, as READY said it. */
export interface SharedStack extends ReadyInfo {
  console_url: string;
  user_pool_id: string;
  user_pool_client_id: string;
  cognito_endpoint: string;
  mqtt_url: string;
  /** The first console user of the runtime's account (that of `api_key`). */
  user_email: string;
  user_password: string;
  /** Its data folder (where its runtime file names its engines). */
  dataDir: string;
}

/** The runtime every browser test file shares (test/helpers/browser-setup.ts); each file signs up users of its own. */
export const sharedStack = (): SharedStack => {
  const ready = process.env.FLEETSTREAM_BROWSER_STACK;
  if (!ready) throw new Error('No shared runtime: run browser tests with `npm test -- --selectProjects browser` (its global setup starts it).');
  return JSON.parse(ready) as SharedStack;
};

/**
 * A workspace of its own for a test file, in the shared runtime's account (whose console user is
 * `user_email`), so that what one file creates is not in another's lists.
 */
export const ownWorkspace = async (stack: SharedStack, name: string): Promise<string> => {
  const response = await fetch(`${stack.base_url}/workspaces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': stack.api_key },
    body: JSON.stringify({ name }),
  });
  if (!response.ok) throw new Error(`POST /workspaces answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { workspace: { id: string } }).workspace.id;
};

/** Where the browser tests save a screenshot of each page (git-ignored). */
export const SCREENSHOT_DIR = join(process.cwd(), '.browser', 'screenshots');

/**
 * Starts Chromium headless. A missing Chromium fails the test (never a skip): `.ci/run` installs it,
 * and a person runs `apt-get install chromium`.
 */
export const launchChromium = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}: run \`apt-get install chromium\` (or set CHROMIUM_PATH). The browser tests need it.`);
  }
  return puppeteer.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // the CI container runs as root, where Chromium's sandbox cannot start
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    defaultViewport: { width: 1280, height: 900 },
  });
};

/** Builds the console (`npm run console:build`) so the tests run the sources as they are. */
export const buildConsole = () => {
  execFileSync(process.execPath, [join('node_modules', 'vite', 'bin', 'vite.js'), 'build', 'console', '--logLevel', 'warn'], { stdio: 'inherit' });
};

/** Saves a full-page screenshot as `<name>.png`. */
export const screenshot = async (page: Page, name: string) => {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
};

/** The text of the page's body. */
export const bodyText = (page: Page) => page.evaluate(() => (globalThis as Dom).document.body.innerText as string);

/** Waits until the page shows a text (polls to a deadline, as every wait in the suite). */
export const waitForText = (page: Page, text: string | RegExp, timeoutMs = BROWSER_WAIT_MS) =>
  until(
    async () => {
      const body = await bodyText(page);
      return typeof text === 'string' ? body.includes(text) : text.test(body);
    },
    `the page to show ${String(text)}`,
    timeoutMs,
  );

/**
 * Waits until an alert (`role="alert"`) on the page says `text`. An alert of the page just left may
 * still be on screen for a moment, so the first alert is not taken for the one awaited; at the
 * deadline the failure names the alerts that were there and the address.
 */
export const waitForAlert = (page: Page, text: RegExp, timeoutMs = BROWSER_WAIT_MS) =>
  waitFor(
    async () => {
      const { alerts, hash } = await page.evaluate(() => ({
        alerts: [...(globalThis as Dom).document.querySelectorAll('[role="alert"]')].map((el: Dom) => el.innerText as string),
        hash: (globalThis as Dom).location.hash as string,
      }));
      if (!alerts.some((alert) => text.test(alert))) throw new Error(`no alert says ${text} at ${hash}; alerts: ${JSON.stringify(alerts)}`);
    },
    `an alert saying ${text}`,
    timeoutMs,
  );

/** Types into the labelled control (found by its `name`), replacing what it held. */
export const fill = async (page: Page, name: string, value: string) => {
  const selector = `[name="${name}"]`;
  await page.waitForSelector(selector, { visible: true });
  // the page hears the clearing too: with an empty `value` nothing is typed after it
  await page.$eval(selector, (el) => {
    (el as Dom).value = '';
    el.dispatchEvent(new (globalThis as Dom).Event('input', { bubbles: true }));
  });
  await page.type(selector, value);
};

/** Clicks the button (or link) whose visible text is `text`. */
export const clickText = async (page: Page, text: string, tag = 'button') => {
  const handle = await page.waitForSelector(`::-p-xpath(//${tag}[normalize-space(.)=${JSON.stringify(text)}])`, { visible: true });
  await handle!.click();
};

/**
 * Goes ahead in the console's confirmation dialog (ui/confirm.tsx, a modal `<dialog>`) once it is
 * open, and answers what it said (its title and consequence); waits for it to close.
 */
export const confirmDialog = async (page: Page): Promise<string> => {
  await page.waitForSelector('dialog[open] [data-testid="confirm"]', { visible: true });
  const said = await page.$eval('dialog[open]', (el) => (el as unknown as { innerText: string }).innerText);
  await page.click('dialog[open] [data-testid="confirm"]');
  await page.waitForSelector('dialog[open]', { hidden: true });
  return said;
};
