/**
 * Issue 33's guards and webhook health in Chromium, signed in as npm start's first console user
 * (whose account the READY line's API key reaches): a fleet-wide job shows its count and asks, no
 * fleet ticked is said to mean every fleet; a retention cut asks with what it loses; a failing
 * webhook shows since when, its failures and its delivery log; the replay button moves what it
 * missed back and says so.
 */
import { jest } from '@jest/globals';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Browser, Page } from 'puppeteer-core';
import { LOCAL_AWS_ENV } from '../../local/dynamodb-local';
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
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

jest.setTimeout(2 * BROWSER_WAIT_MS);

// Callbacks of page.evaluate/$eval run in the page: this project compiles without the DOM types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Dom = any;

let stack: SharedStack;
let browser: Browser;
let page: Page;
let receiver: WebhookReceiver;
let ws: string;
let north: string;
const windowDialogs: string[] = [];

const api = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${stack.base_url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': stack.api_key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
};

const dialogOpen = () => page.$('dialog[open]').then(Boolean);

beforeAll(async () => {
  stack = sharedStack();
  ws = await ownWorkspace(stack, 'Guards');
  receiver = await startWebhookReceiver(() => 503);
  // two fleets: north with 2 devices, south with 1
  north = (await api('POST', `/workspaces/${ws}/fleets`, { name: 'north' })).body.fleet.id;
  const south = (await api('POST', `/workspaces/${ws}/fleets`, { name: 'south' })).body.fleet.id;
  for (const fleet of [north, north, south]) await api('POST', `/workspaces/${ws}/devices`, { name: `d-${fleet.slice(-4)}`, fleet_id: fleet });

  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  // the guards are the page's own dialogs: a window.confirm is dismissed and recorded (none expected)
  page.on('dialog', (dialog) => {
    windowDialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(stack.console_url);
  await fill(page, 'email', stack.user_email);
  await fill(page, 'password', stack.user_password);
  await clickText(page, 'Sign in');
  await waitForText(page, 'Sign out');
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await receiver?.stop();
});

const consoleAt = (path: string) => `${stack.console_url}#/w/${ws}/${path}`;

describe('guards', () => {
  it('shows a fleet-wide job’s count and fleets and asks; Cancel schedules nothing; no fleet ticked says every fleet', async () => {
    await page.goto(consoleAt('jobs'));
    await until(async () => (await page.$$('input[name="target-fleet"]')).length === 3, 'the fleets listed'); // the default fleet, north, south
    await page.$$eval('input[name="target-fleet"]', (boxes) => (boxes.find((b) => b.parentElement!.textContent!.trim() === 'north') as Dom).click());
    await fill(page, 'job-name', 'reboot');
    await fill(page, 'job-value', '{"now": true}');
    await clickText(page, 'Schedule job');
    await page.waitForSelector('dialog[open]', { visible: true });
    const asked = await page.$eval('dialog[open]', (el) => (el as Dom).innerText as string);
    const focused = await page.evaluate(() => (globalThis as Dom).document.activeElement?.textContent);
    await screenshot(page, 'guards-01-fleet-job');

    expect(asked).toContain('Schedule job reboot on 2 devices?');
    expect(asked).toContain('the fleet north');
    expect(focused).toBe('Cancel'); // the safe choice has the focus
    await clickText(page, 'Cancel');
    await until(async () => !(await dialogOpen()), 'the dialog closed');
    expect((await api('GET', `/workspaces/${ws}/rollouts`)).body.rollouts).toEqual([]);

    // untick north: no fleet is ticked, which the dialog says means every fleet (3 devices)
    await page.$$eval('input[name="target-fleet"]', (boxes) => (boxes.find((b) => b.parentElement!.textContent!.trim() === 'north') as Dom).click());
    await clickText(page, 'Schedule job');
    const said = await confirmDialog(page);
    expect(said).toContain('3 devices');
    expect(said).toContain('No fleet is ticked: this schedules on every fleet.');
    await until(async () => (await page.evaluate(() => (globalThis as Dom).location.hash as string)).includes('/rollouts/rol-'), 'the rollout page');
    const rollouts = (await api('GET', `/workspaces/${ws}/rollouts`)).body.rollouts;
    expect(rollouts).toHaveLength(1);
    expect(rollouts[0].total).toBe(3);
  });

  it('asks before a retention cut, with what becomes unreadable; Cancel keeps the retention', async () => {
    await api('PATCH', `/workspaces/${ws}`, { data_retention_days: 90 });
    await page.goto(consoleAt('settings'));
    await waitForText(page, 'kept 90 days');
    await fill(page, 'retention-days', '1');
    await clickText(page, 'Save retention');
    await page.waitForSelector('dialog[open]', { visible: true });
    const asked = await page.$eval('dialog[open]', (el) => (el as Dom).innerText as string);
    await screenshot(page, 'guards-02-retention-cut');

    expect(asked).toContain('Keep data points 1 day instead of 90 days?');
    expect(asked).toContain('89 days of data');
    expect(asked).toMatch(/About \d+ points were stored on those days/);
    // Escape cancels, as Cancel does
    await page.keyboard.press('Escape');
    await until(async () => !(await dialogOpen()), 'the dialog closed');
    expect((await api('GET', `/workspaces/${ws}`)).body.workspace.data_retention_days).toBe(90);

    await clickText(page, 'Save retention');
    await confirmDialog(page);
    await until(async () => (await api('GET', `/workspaces/${ws}`)).body.workspace.data_retention_days === 1, 'the retention cut');
    // raising it asks nothing
    await fill(page, 'retention-days', '30');
    await clickText(page, 'Save retention');
    await until(async () => (await api('GET', `/workspaces/${ws}`)).body.workspace.data_retention_days === 30, 'the retention raised');
    expect(await dialogOpen()).toBe(false);
  });
});

describe('webhook health', () => {
  let id: string;

  it('shows a failing webhook’s failing-since, failures in a row and last error, and its delivery log', async () => {
    id = (await api('POST', `/workspaces/${ws}/integrations`, { name: 'dead-hook', url: receiver.url, events: false })).body.integration.id;
    // two failed test deliveries (the receiver answers 503): the status and the log record them
    for (let i = 0; i < 2; i++) expect((await api('POST', `/workspaces/${ws}/integrations/${id}/test`)).body.delivery.ok).toBe(false);

    await page.goto(consoleAt('integrations'));
    await page.waitForSelector('[data-testid="webhook-health"]');
    const health = await page.$eval('[data-testid="webhook-health"]', (el) => ({ text: (el as Dom).textContent as string, cls: (el as Dom).className }));
    expect(health.text).toMatch(/^Failing since .+: 2 failed deliveries in a row\.$/);
    expect(health.cls).toBe('failing');
    expect(await page.$eval('[data-testid="consecutive-failures"]', (el) => el.textContent)).toBe('2');
    expect(await page.$eval('[data-testid="failing-since"]', (el) => el.textContent)).not.toBe('—');
    expect(await page.$eval('[data-testid="last-error"]', (el) => el.textContent)).toContain('503');

    await page.click('details.delivery-log summary');
    await page.waitForSelector('[data-testid="delivery-log"] tbody tr');
    const rows = await page.$$eval('[data-testid="delivery-log"] tbody tr', (trs) => trs.map((tr) => (tr as Dom).innerText as string));
    await screenshot(page, 'guards-03-failing-webhook');
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row).toContain('failed (HTTP 503) · test');
      expect(row).toMatch(/\d+ ms/);
      expect(row).toContain('1 point');
    }
  });

  it('replays what the webhook missed from the dead-letter queue, and says how many moved', async () => {
    receiver.behave(() => 200);
    const at = new Date().toISOString();
    const pack = `${JSON.stringify({ kind: 'entries', workspace_id: ws, of: 'data', count: 1, tags: ['t'] })}\n${JSON.stringify({
      workspace_id: ws,
      fleet_id: north,
      device_id: 'dev-replayed',
      device_name: 'replayed',
      timestamp_device: at,
      timestamp_in: at,
      tag: 't',
      payload: { replayed: true },
    })}`;
    const sqs = new SQSClient({
      endpoint: stack.sqs_endpoint,
      region: LOCAL_AWS_ENV.AWS_REGION,
      credentials: { accessKeyId: LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
      useQueueUrlAsEndpoint: false,
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.queue_urls['forward-dlq'], MessageBody: pack }));

    await page.click('button[aria-label="Replay missed deliveries of dead-hook"]');
    await until(async () => /moved back/.test((await page.$eval('[data-testid="replay-result"]', (el) => el.textContent)) ?? ''), 'the replay’s result');
    expect(await page.$eval('[data-testid="replay-result"]', (el) => el.textContent)).toMatch(/^1 message moved back to the forward queue/);
    await until(() => receiver.accepted().some((e) => (e.payload as { replayed?: boolean }).replayed === true), 'the replayed point delivered');
    await screenshot(page, 'guards-04-replayed');
    expect(windowDialogs).toEqual([]);
  });
});

describe('the usage page', () => {
  it('shows each quota with its current use, and draws failures in the failure colour', async () => {
    await page.goto(consoleAt('usage'));
    await page.waitForSelector('[data-testid="limits"] [data-limit="devices"]');
    const limit = (name: string) => page.$eval(`[data-testid="limits"] [data-limit="${name}"]`, (el) => el.textContent);

    expect(await limit('devices')).toBe('3 of 10,000');
    expect(await limit('fleets')).toBe('3 of 1,000'); // the default fleet, north and south
    // the account's workspaces: other files of the project share this account
    const workspaces = (await api('GET', '/workspaces')).body.workspaces.length;
    expect(await limit('workspaces_per_account')).toBe(`${workspaces} of 100`);
    expect(await limit('points_per_device_per_day')).toBe('100,000'); // a device's limit: no workspace-wide use
    await page.waitForSelector('[data-testid="usage-chart-webhook_deliveries"]');
    expect(await page.$eval('[data-testid="usage-chart-webhook_deliveries"]', (el) => el.getAttribute('data-colors'))).toBe(
      'webhook_deliveries=#2ca02c webhook_failures=#d62728',
    );
    await screenshot(page, 'guards-05-usage');
  });
});
