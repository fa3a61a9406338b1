import type { IncomingMessage } from 'node:http';

/** An API Gateway throttle (a stage's default method settings, or a method's own): requests per second, and the bucket's size. */
export interface StageThrottle {
  rateLimit: number;
  burstLimit: number;
}

/** A WAF rate-based rule keyed by the source address (aggregate key `IP`), whose action is Block. */
export interface IpRateRule {
  /** Requests one address may send within the window; past it the address is blocked. */
  limit: number;
  /** How far back WAF counts, in seconds (60, 120, 300 or 600). */
  windowSeconds: number;
}

/**
 * API Gateway's throttling, a token bucket
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html):
 * it holds `burstLimit` requests and fills at `rateLimit` a second; a request finding it empty is
 * refused (429, the THROTTLED gateway response).
 */
export const tokenBucket = ({ rateLimit, burstLimit }: StageThrottle, now: () => number = Date.now) => {
  let tokens = burstLimit;
  let at = now();
  return () => {
    const t = now();
    tokens = Math.min(burstLimit, tokens + ((t - at) / 1000) * rateLimit);
    at = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
};

/**
 * A stage's method throttles: API Gateway applies a stage's throttle at the method level, so each
 * method (a route's `METHOD /path`) has a bucket of its own, with the method's own settings when
 * the stage has some for it (`own`, keyed `METHOD /path`, or `* /path` for every method of a
 * resource), else the stage's default. True when the method admits the request.
 */
export const methodThrottles = (
  stageDefault: StageThrottle | undefined,
  own: Readonly<Record<string, StageThrottle>> = {},
  now: () => number = Date.now,
): ((method: string, path: string) => boolean) => {
  const buckets = new Map<string, () => boolean>();
  return (method, path) => {
    const key = `${method} ${path}`;
    let admit = buckets.get(key);
    if (!admit) {
      const settings = own[key] ?? own[`* ${path}`] ?? stageDefault;
      admit = settings ? tokenBucket(settings, now) : () => true;
      buckets.set(key, admit);
    }
    return admit();
  };
};

/**
 * WAF's rate-based rule by source address
 * (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-high-level-settings.html):
 * it counts each address's requests over the last `windowSeconds`, and blocks an address while
 * that count is at the limit. Blocked requests count too (the rule counts every request it
 * evaluates), so an address that keeps sending past its limit stays blocked until its rate falls.
 * Counted in one-second slots; WAF applies the limit "near" the number set and only after it
 * notices, here exactly and at once. True when the address's request passes.
 */
export const ipRateRule = ({ limit, windowSeconds }: IpRateRule, now: () => number = Date.now): ((address: string) => boolean) => {
  const slotsByAddress = new Map<string, Map<number, number>>();
  let sweptAt = Math.floor(now() / 1000);
  // The address's requests in the window ending with `second`, forgetting older slots.
  const inWindow = (slots: Map<number, number>, second: number) => {
    let count = 0;
    for (const [slot, n] of slots) {
      if (slot <= second - windowSeconds) slots.delete(slot);
      else count += n;
    }
    return count;
  };
  return (address) => {
    const second = Math.floor(now() / 1000);
    if (second - sweptAt >= windowSeconds) {
      for (const [other, slots] of slotsByAddress) if (inWindow(slots, second) === 0) slotsByAddress.delete(other);
      sweptAt = second;
    }
    let slots = slotsByAddress.get(address);
    if (!slots) slotsByAddress.set(address, (slots = new Map()));
    const before = inWindow(slots, second);
    slots.set(second, (slots.get(second) ?? 0) + 1);
    return before < limit;
  };
};

/**
 * The caller's address as WAF and API Gateway take it: the connection's. `X-Forwarded-For` is
 * the caller's to write, so neither trusts it (the rule's aggregate key is `IP`, not
 * `FORWARDED_IP`). An IPv4 client of a dual-stack socket is named by its IPv4 address.
 */
export const sourceAddress = (req: IncomingMessage) => (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
