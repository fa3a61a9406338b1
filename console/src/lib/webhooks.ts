import type { TestDelivery } from './api';

/** A test delivery's outcome in words: what happened, and what to do about it when it failed. */
export interface DeliveryReport {
  ok: boolean;
  text: string;
}

/** What to check when the receiver answered with this status. */
const statusHint = (status: number) => {
  if (status >= 300 && status < 400) return 'redirects are not followed: use the address it redirects to.';
  if (status === 401 || status === 403) return 'the receiver refused it: check that it verifies the signature with this webhook’s current secret.';
  if (status === 404 || status === 405) return 'check the URL’s path, and that the receiver takes POSTs there.';
  if (status === 408 || status === 429) return 'the receiver is busy or limits requests: try again later.';
  if (status >= 500) return 'the receiver failed: check its logs.';
  return 'check the receiver’s logs for why it refused the batch.';
};

/** What to check for a failure without an answer, from the error the API reports (`CODE: message`). */
const errorHint = (error: string, host: string, hostname: string) => {
  if (/^ECONNREFUSED\b/.test(error)) return `connection refused by ${host} — check the URL and that the receiver is running.`;
  if (/^(ENOTFOUND|EAI_AGAIN)\b/.test(error)) return `the host ${hostname} was not found — check the URL’s host name.`;
  if (/^no answer within (\d+) ms/.test(error))
    return `${error} — the receiver must answer within that time; check that it is up and answers before doing slow work.`;
  if (/private address/.test(error)) return `${host} is a private address, which webhooks may not reach — use a public address.`;
  if (/^(ECONNRESET|EPIPE|ECONNABORTED)\b/.test(error)) return `${host} dropped the connection — check the receiver’s logs.`;
  if (/^(EHOSTUNREACH|ENETUNREACH|ETIMEDOUT)\b/.test(error)) return `${host} cannot be reached — check the URL and the receiver’s network.`;
  if (/CERT|SSL|TLS|self[- ]signed/i.test(error))
    return `the TLS certificate of ${host} was not accepted (${error}) — the receiver needs a valid certificate from a public authority.`;
  return `${error} — check the URL.`;
};

/**
 * Describes a test delivery for a person: "Delivered: HTTP 200 in 34 ms." or "Failed: …" with what
 * to check (the URL, the receiver, its certificate or its signature check).
 */
export const describeTestDelivery = (delivery: TestDelivery, url: string): DeliveryReport => {
  let host = url;
  let hostname = url;
  try {
    ({ host, hostname } = new URL(url));
  } catch {
    // a URL the API accepted always parses; keep the text if not
  }
  if (delivery.ok) return { ok: true, text: `Delivered: HTTP ${delivery.status} in ${delivery.duration_ms} ms.` };
  if (delivery.status !== null) {
    return { ok: false, text: `Failed: ${host} answered HTTP ${delivery.status} after ${delivery.duration_ms} ms — ${statusHint(delivery.status)}` };
  }
  return { ok: false, text: `Failed: ${errorHint(delivery.error ?? 'no answer', host, hostname)}` };
};
