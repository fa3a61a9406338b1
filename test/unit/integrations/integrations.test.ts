import { signatureHeaders, wantsMessage, webhookUrlProblems } from '../../../lambdas/domain/webhooks/integrations';
import { renderEntry } from '../../../lambdas/domain/webhooks/forward-pack';
import { retryDelaySeconds, webhookBody } from '../../../lambdas/domain/webhooks/forwarding';
import { dataMessage, eventMessage, eventTimestamp } from '../../../lambdas/domain/webhooks/events';
import { CreateIntegrationBodySchema, UpdateIntegrationBodySchema, WEBHOOK_URL_MAX } from '../../../lambdas/schemas/integration';
import type { IntegrationRecord } from '../../../lambdas/stores/integration-store';
import { verifySignature } from '../../helpers/webhook-receiver';

const PRIVATE = 'Must not target a private, loopback or link-local address.';

describe('webhook URL rules', () => {
  it.each([
    ['https://hooks.example.com/x', []],
    ['https://203.0.114.7:8443/x', []],
    ['http://hooks.example.com/x', ['Must use https.']],
    ['https://127.0.0.1/x', [PRIVATE]],
    ['https://10.1.2.3/x', [PRIVATE]],
    ['https://172.20.0.1/x', [PRIVATE]],
    ['https://192.168.1.1/x', [PRIVATE]],
    ['https://100.64.0.1/x', [PRIVATE]],
    ['https://169.254.169.254/latest/meta-data', [PRIVATE]],
    ['https://0.0.0.0/x', [PRIVATE]],
    ['https://[::1]/x', [PRIVATE]],
    ['https://[fe80::1]/x', [PRIVATE]],
    ['https://[fd00::1]/x', [PRIVATE]],
    ['https://[::ffff:127.0.0.1]/x', [PRIVATE]],
    ['https://[::ffff:a9fe:a9fe]/latest/meta-data', [PRIVATE]],
    ['https://[::127.0.0.1]/x', [PRIVATE]],
    ['https://[::a9fe:a9fe]/x', [PRIVATE]],
    ['https://[64:ff9b::127.0.0.1]/x', [PRIVATE]],
    ['https://[64:ff9b::a9fe:a9fe]/x', [PRIVATE]],
    ['https://[64:ff9b:1::a00:1]/x', [PRIVATE]],
    ['https://[2002:7f00:1::1]/x', [PRIVATE]],
    ['https://[2002:a9fe:a9fe::]/x', [PRIVATE]],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x', [PRIVATE]],
    ['https://[100::1]/x', [PRIVATE]],
    ['https://[fec0::1]/x', [PRIVATE]],
    ['https://[2001:db8::1]/x', [PRIVATE]],
    ['https://[2606:4700:4700::1111]/x', []],
    ['https://[::ffff:8.8.8.8]/x', []],
    ['https://0x7f000001/x', [PRIVATE]],
    ['https://2130706433/x', [PRIVATE]],
    ['https://127.1/x', [PRIVATE]],
    ['https://127.0.0.1./x', [PRIVATE]],
    ['https://localhost/x', [PRIVATE]],
    ['https://localhost./x', [PRIVATE]],
    ['https://LOCALHOST../x', [PRIVATE]],
    ['https://api.localhost./x', [PRIVATE]],
    ['https://metadata.google.internal./x', [PRIVATE]],
    ['https://printer.local./x', [PRIVATE]],
    ['https://intranet./x', [PRIVATE]],
    ['https://hooks.example.com./x', []],
    ['https://api.localhost/x', [PRIVATE]],
    ['https://db.internal/x', [PRIVATE]],
    ['https://intranet/x', [PRIVATE]],
    ['https://user:pw@hooks.example.com/x', ['Must not carry a user name or password.']],
  ])('judges %s for the cloud', (url, problems) => {
    expect(webhookUrlProblems(url, false)).toEqual(problems);
  });

  it('takes http and private targets when the deployment allows them (the local runtime)', () => {
    expect(webhookUrlProblems('http://127.0.0.1:8080/hook', true)).toEqual([]);
    expect(webhookUrlProblems('http://u:p@127.0.0.1/hook', true)).toEqual(['Must not carry a user name or password.']);
  });
});

describe('integration bodies', () => {
  it('fills the defaults of a new integration', () => {
    expect(CreateIntegrationBodySchema.parse({ url: 'https://example.com/h' })).toEqual({
      name: 'webhook',
      url: 'https://example.com/h',
      data: true,
      events: true,
      tags: [],
      enabled: true,
    });
  });

  it.each([
    ['a non-http URL', { url: 'ftp://example.com/h' }, 'url'],
    ['a relative URL', { url: '/hook' }, 'url'],
    ['an overlong URL', { url: `https://example.com/${'a'.repeat(WEBHOOK_URL_MAX)}` }, 'url'],
    ['a bad tag', { url: 'https://example.com/h', tags: ['no spaces'] }, 'tags.0'],
    ['a non-boolean flag', { url: 'https://example.com/h', data: 'yes' }, 'data'],
    ['an unknown field', { url: 'https://example.com/h', secret: 'mine' }, ''],
  ])('rejects %s', (_what, body, field) => {
    const result = CreateIntegrationBodySchema.safeParse(body);

    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path.join('.'))).toContain(field);
  });

  it('rejects an update that changes nothing', () => {
    expect(UpdateIntegrationBodySchema.safeParse({}).success).toBe(false);
    expect(UpdateIntegrationBodySchema.safeParse({ enabled: false }).success).toBe(true);
  });
});

const integration = (fields: Partial<IntegrationRecord> = {}): IntegrationRecord => ({
  id: 'int-aaaaaaaaaaaaaaaaaaaa',
  workspace_id: 'wks-aaaaaaaaaaaaaaaaaaaa',
  account_id: 'acc-aaaaaaaaaaaaaaaaaaaa',
  name: 'hook',
  url: 'https://example.com/h',
  data: true,
  events: true,
  tags: [],
  enabled: true,
  created_at: '2024-01-01T00:00:00.000Z',
  updated_at: '2024-01-01T00:00:00.000Z',
  secret: 'whsec_current',
  previous_secret: null,
  previous_secret_expires_at: null,
  last_delivery_at: null,
  last_error_at: null,
  last_error: null,
  consecutive_failures: 0,
  ...fields,
});

const place = { workspace_id: 'wks-aaaaaaaaaaaaaaaaaaaa', fleet_id: 'flt-aaaaaaaaaaaaaaaaaaaa', device_id: 'dev-aaaaaaaaaaaaaaaaaaaa' };
const point = (tag: string) =>
  dataMessage({ ...place, tag, timestamp_device: '2024-01-01T00:00:00.000Z', timestamp_in: '2024-01-01T00:00:01.000Z', payload: { v: 1 } }, 'sensor');
const jobEvent = eventMessage(place, 'job', 'c2d', { name: 'reboot' });

describe('which messages an integration wants', () => {
  it.each([
    ['everything', {}, [true, true, true]],
    ['data only', { events: false }, [true, true, false]],
    ['events only', { data: false }, [false, false, true]],
    ['a tag filter (events pass)', { tags: ['temp'] }, [true, false, true]],
    ['nothing when disabled', { enabled: false }, [false, false, false]],
  ])('takes %s', (_what, fields, expected) => {
    const hook = integration(fields);

    expect([point('temp'), point('humidity'), jobEvent].map((m) => wantsMessage(hook, m))).toEqual(expected);
  });
});

describe('webhook signatures', () => {
  it('signs `${timestamp}.${body}` so that the verifier of docs/webhooks.md accepts it, and nothing else', () => {
    const body = '{"batch_id":"b","result":[]}';
    const headers = signatureHeaders(integration(), body, 1_700_000_000_000);

    expect(headers['x-fleetstream-timestamp']).toBe('1700000000');
    expect(verifySignature('whsec_current', headers, body, 300, 1_700_000_000_000)).toBe(true);
    expect(verifySignature('whsec_current', headers, `${body} `, 300, 1_700_000_000_000)).toBe(false);
    expect(verifySignature('whsec_current', headers, body, 300, 1_700_000_000_000 + 301_000)).toBe(false);
  });

  it('adds the previous secret’s signature only until it expires', () => {
    const hook = integration({ previous_secret: 'whsec_old', previous_secret_expires_at: '2024-01-02T00:00:00.000Z' });
    const body = '{}';
    const during = Date.parse('2024-01-01T12:00:00.000Z');
    const after = Date.parse('2024-01-02T00:00:01.000Z');

    expect(verifySignature('whsec_old', signatureHeaders(hook, body, during), body, 300, during)).toBe(true);
    expect(verifySignature('whsec_old', signatureHeaders(hook, body, after), body, 300, after)).toBe(false);
    expect(verifySignature('whsec_current', signatureHeaders(hook, body, after), body, 300, after)).toBe(true);
  });
});

describe('forwarding helpers', () => {
  it('backs off exponentially up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((n) => retryDelaySeconds({ baseSeconds: 30, maxSeconds: 900 }, n))).toEqual([30, 60, 120, 240, 480, 900, 900]);
  });

  it('numbers entries from "0" and drops the queue’s own `kind`', () => {
    const body = JSON.parse(
      webhookBody(
        'b1',
        [point('temp'), jobEvent].map((m) => renderEntry(m).json),
      ).toString(),
    );

    expect(body.batch_id).toBe('b1');
    expect(body.result.map((e: { id: string }) => e.id)).toEqual(['0', '1']);
    expect(body.result.some((e: object) => 'kind' in e)).toBe(false);
  });

  it('stamps events in RFC 3339 with microseconds, strictly increasing', () => {
    const stamps = Array.from({ length: 1000 }, eventTimestamp);

    expect(stamps[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(new Set(stamps).size).toBe(1000);
    expect([...stamps].sort()).toEqual(stamps);
  });
});
