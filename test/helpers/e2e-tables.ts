import { randomBytes } from 'node:crypto';
import { workerDynamoDbEndpoint } from './dynamodb-pool';
import { retryDynamoDbLocalLockTimeouts } from '../../local/dynamodb-lock-retry';

// A setup file of the e2e and contract projects, run before each test file's first import: the
// files share their worker's DynamoDB Local (test/helpers/dynamodb-pool.ts), so the tables a file's
// handlers and runtimes use get this file's own names (two contract files that both made the
// default table at once failed with "Cannot create preexisting table"). Set here rather than when a
// runtime starts, because the handlers read them once, when lambdas/shared/env.ts loads, and a test
// may import a handler module before it starts a runtime.
const suffix = randomBytes(4).toString('hex');
process.env.REGISTRY_TABLE = `fleetstream-registry-${suffix}`;
process.env.TIMESERIES_TABLE = `fleetstream-timeseries-${suffix}`;

// The SDK finds the worker's engine through the standard variables (DynamoDB Local serves DynamoDB
// Streams on its own endpoint); a runtime the file starts sets them again to the same engine.
const endpoint = workerDynamoDbEndpoint();
if (endpoint) Object.assign(process.env, { AWS_ENDPOINT_URL_DYNAMODB: endpoint, AWS_ENDPOINT_URL_DYNAMODB_STREAMS: endpoint });

// DynamoDB Local's "too long waiting for a lock" 500, which DynamoDB never answers, is sent again
// here as the local runtime sends it (local/dynamodb-lock-retry.ts): a contract file that writes
// hundreds of devices at once through the stores, with no runtime, met it on a loaded machine.
if (endpoint) retryDynamoDbLocalLockTimeouts();
