/**
 * The console's security headers, as data: what the CloudFront distribution's response headers
 * policy sends (lib/constructs/console-site.ts) and what `npm start`'s console server sends
 * (local/console-site.ts), so that the browser tests run the console under the deployed policy.
 * No import: the stack passes CloudFormation tokens in `connect`, the local server addresses.
 */

/**
 * The Content-Security-Policy of the console. The Vite build has no inline script or style (one
 * module script and one stylesheet under /assets, checked by the browser test), so none is
 * allowed; style changes by script go through the CSSOM, which `style-src` does not govern. The
 * page may call only its own origin (`/config.json`) and `connect`: the API, Cognito and the
 * firmware bucket's presigned uploads. No frame may hold it, no plugin, no `<base>`, and forms
 * post only to itself.
 */
export const consoleContentSecurityPolicy = (connect: readonly string[]) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${connect.join(' ')}`,
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');

/** HSTS's max-age: a year, subdomains included (the distribution's own *.cloudfront.net name). */
export const HSTS_MAX_AGE_SECONDS = 365 * 24 * 3600;

/** The other security headers, with their values, as the local server writes them. */
export const consoleSecurityHeaders = (connect: readonly string[]): Record<string, string> => ({
  'content-security-policy': consoleContentSecurityPolicy(connect),
  'strict-transport-security': `max-age=${HSTS_MAX_AGE_SECONDS}; includeSubDomains`,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'strict-origin-when-cross-origin',
});

/** The origin (`scheme://host[:port]`) of an address, as a CSP source names it. */
export const originOf = (url: string) => new URL(url).origin;
