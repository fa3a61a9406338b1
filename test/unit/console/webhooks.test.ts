import type { TestDelivery } from '../../../console/src/lib/api';
import { describeTestDelivery } from '../../../console/src/lib/webhooks';

const URL = 'https://hooks.example.com:8443/fleetstream';
const failed = (error: string, status: number | null = null): TestDelivery => ({ ok: false, status, error, duration_ms: 12, batch_id: 'test-1', kind: 'data' });

describe('describing a test delivery for a person', () => {
  it('says it was delivered, with the status and the time it took', () => {
    expect(describeTestDelivery({ ok: true, status: 200, error: null, duration_ms: 34, batch_id: 'test-1', kind: 'data' }, URL)).toEqual({
      ok: true,
      text: 'Delivered: HTTP 200 in 34 ms.',
    });
  });

  it.each([
    [500, /hooks\.example\.com:8443 answered HTTP 500 after 12 ms — the receiver failed: check its logs/],
    [404, /HTTP 404 .*check the URL’s path/],
    [401, /HTTP 401 .*verifies the signature with this webhook’s current secret/],
    [301, /HTTP 301 .*redirects are not followed/],
    [429, /HTTP 429 .*try again later/],
    [422, /HTTP 422 .*check the receiver’s logs/],
  ])('says what to check when the receiver answered %i', (status, words) => {
    const report = describeTestDelivery(failed(`HTTP ${status}`, status), URL);

    expect(report.ok).toBe(false);
    expect(report.text).toMatch(/^Failed: /);
    expect(report.text).toMatch(words);
  });

  it.each([
    ['ECONNREFUSED: connect ECONNREFUSED 10.0.0.1:8443', /connection refused by hooks\.example\.com:8443 — check the URL and that the receiver is running/],
    ['ENOTFOUND: getaddrinfo ENOTFOUND hooks.example.com', /host hooks\.example\.com was not found — check the URL’s host name/],
    ['no answer within 10000 ms', /no answer within 10000 ms — the receiver must answer within that time/],
    ['10.1.2.3 is a private address', /private address, which webhooks may not reach/],
    ['EPRIVATEADDRESS: hooks.example.com resolves only to private addresses', /private address, which webhooks may not reach/],
    ['ECONNRESET: socket hang up', /dropped the connection/],
    ['DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate', /TLS certificate .* was not accepted \(DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate\)/],
    ['EWHATEVER: something new', /^Failed: EWHATEVER: something new — check the URL\.$/],
  ])('says what to check when no answer came: %s', (error, words) => {
    expect(describeTestDelivery(failed(error), URL)).toEqual({ ok: false, text: expect.stringMatching(words) });
  });
});
