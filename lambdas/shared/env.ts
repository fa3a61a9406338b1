/** Configuration, read once from the environment. Endpoints are never read here: the SDK takes them
 * from the standard AWS_ENDPOINT_URL_* variables. */

const intFrom = (value: string | undefined, fallback: number): number => {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(n) ? n : fallback;
};

/** The DynamoDB table holding accounts, workspaces, fleets, devices, jobs, FOTA and keys. */
export const REGISTRY_TABLE = process.env.REGISTRY_TABLE ?? 'fleetstream-registry';

/** Largest accepted request body, in bytes (job values must also fit a DynamoDB item). */
export const MAX_BODY_BYTES = intFrom(process.env.MAX_BODY_BYTES, 64 * 1024);

/** Parallel BatchWriteItem calls when scheduling on whole fleets. */
export const WRITE_CONCURRENCY = intFrom(process.env.WRITE_CONCURRENCY, 16);

/** Queue that the device API fills and the ingest Lambda drains. */
export const INGEST_QUEUE_URL = process.env.INGEST_QUEUE_URL ?? '';

/** Queue of data points and events on their way to webhooks. */
export const FORWARD_QUEUE_URL = process.env.FORWARD_QUEUE_URL ?? '';
