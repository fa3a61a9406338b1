import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { BucketDefinition } from '../lambdas/buckets';

/** A CORS rule of a bucket, as S3's CORSRule. */
export interface CorsRule {
  allowedOrigins: readonly string[];
  allowedMethods: readonly string[];
  allowedHeaders: readonly string[];
  exposedHeaders: readonly string[];
  maxAgeSeconds?: number;
}

/** `*` in an allowed origin or header matches any run of characters (S3 takes one per value). */
const matches = (pattern: string, value: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i').test(value);

/** The CORS rule of a bucket that admits an origin, a method and request headers: S3 takes the first that does. */
export const corsRuleFor = (rules: readonly CorsRule[] | undefined, origin: string, method: string, headers: string[] = []) =>
  rules?.find(
    (rule) =>
      rule.allowedOrigins.some((o) => matches(o, origin)) &&
      rule.allowedMethods.includes(method) &&
      headers.every((h) => rule.allowedHeaders.some((a) => matches(a, h))),
  );

/** The CORS headers S3 adds to an answer for an origin a rule admits. https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html */
export const corsHeaders = (rule: CorsRule, origin: string): OutgoingHttpHeaders => ({
  'access-control-allow-origin': rule.allowedOrigins.includes('*') ? '*' : origin,
  'access-control-allow-methods': rule.allowedMethods.join(', '),
  ...(rule.exposedHeaders.length ? { 'access-control-expose-headers': rule.exposedHeaders.join(', ') } : {}),
  ...(rule.allowedOrigins.includes('*') ? {} : { 'access-control-allow-credentials': 'true' }),
  vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
});

/** S3's refusal of a preflight no rule admits. */
export const CORS_REFUSAL_MESSAGE =
  "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";

/**
 * The headers of S3's 200 to a CORS preflight (OPTIONS), from the bucket's rules alone, or
 * undefined when no rule admits its origin, method and headers.
 */
export const preflightHeaders = (rules: readonly CorsRule[] | undefined, headers: IncomingHttpHeaders): OutgoingHttpHeaders | undefined => {
  const origin = typeof headers.origin === 'string' ? headers.origin : undefined;
  const wanted = headers['access-control-request-method'];
  const requested = String(headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const rule = origin && typeof wanted === 'string' ? corsRuleFor(rules, origin, wanted, requested) : undefined;
  if (!rule) return undefined;
  return {
    ...corsHeaders(rule, origin!),
    ...(requested.length ? { 'access-control-allow-headers': requested.join(', ') } : {}),
    ...(rule.maxAgeSeconds !== undefined ? { 'access-control-max-age': String(rule.maxAgeSeconds) } : {}),
  };
};

/** A bucket's CORS rules as the stack writes them (lambdas/buckets.ts), for the console at `origins`. */
export const consoleCorsRules = (definition: BucketDefinition, origins: readonly string[]): CorsRule[] =>
  definition.consoleCors
    ? [
        {
          allowedOrigins: origins,
          allowedMethods: definition.consoleCors.methods,
          allowedHeaders: definition.consoleCors.headers,
          exposedHeaders: definition.consoleCors.exposedHeaders,
          maxAgeSeconds: definition.consoleCors.maxAgeSeconds,
        },
      ]
    : [];
