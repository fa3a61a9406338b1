import type * as z from 'zod';

/**
 * The schemas of one operation of the route table: what it reads and what it answers. The handler
 * parses every request with them (an operation without `query` takes no query parameter, one
 * without `body` takes no body) and the OpenAPI document is generated from them, so the two can
 * never disagree.
 */
export interface Operation {
  /** Path parameters, by their names in the route table's path. */
  path?: z.ZodObject;
  /** Query parameters; the array-typed ones are repeatable (`?fleet=a&fleet=b`). */
  query?: z.ZodObject;
  /** The JSON body; omitted when the operation takes none. */
  body?: z.ZodType;
  /** The success answer's body. */
  response: z.ZodType;
  /** The success status when it is not 200 (201: created; 202: accepted for later processing). */
  status?: 201 | 202;
  /** When the operation answers 409 (a conflict it can meet); omitted when it never does. */
  conflict?: string;
  /** When it answers 404; by default any operation with path parameters or a device caller can. */
  notFound?: string;
  /** When it answers 429 `quota_exceeded` (a workspace's or a device's limit); omitted when it never does. */
  quota?: string;
}

/** The operations of one handler, keyed by operationId. */
export type Operations = Record<string, Operation>;

/** When a fleet-wide scheduling (a rollout) answers 429 `quota_exceeded`: the jobs' and the FOTA's alike. */
export const ROLLOUTS_PER_DAY =
  'The workspace has started its limit of rollouts (fleet-wide schedulings) this UTC day (limits.rollouts_per_day; Retry-After: the seconds to midnight UTC)';
