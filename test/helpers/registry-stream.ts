import { afterAll, expect } from '@jest/globals';
import type { Db } from '../../lambdas/shared/clients';

/**
 * Runs the registry stream's consumer (its handler, with lambdas/streams.ts's batch size,
 * parallelization and filter, no window) on the table's stream for the test file, as the deployed
 * mapping feeds it; stopped after the file, which then fails if any invocation failed. Call it
 * once REGISTRY_TABLE is set: the handler's modules read it as they load.
 */
export const runRegistryStream = async (db: Db) => {
  const { startDynamoDbStreamPoller, streamFilterOf } = await import('../../local/dynamodb-stream-poller');
  const { handler } = await import('../../lambdas/handlers/registry-stream/handler');
  const { REGISTRY_STREAM } = await import('../../lambdas/streams');
  const errors: unknown[] = [];
  const poller = await startDynamoDbStreamPoller({
    tableName: db.table,
    batchSize: REGISTRY_STREAM.batchSize,
    maxBatchingWindowMs: 0,
    parallelizationFactor: REGISTRY_STREAM.parallelizationFactor,
    retryAttempts: 3,
    bisectBatchOnError: true,
    timeoutMs: 30_000,
    functionName: 'registry-stream',
    handler,
    filter: streamFilterOf(REGISTRY_STREAM),
    startingPosition: 'TRIM_HORIZON',
    onError: (error) => errors.push(error),
  });
  afterAll(async () => {
    await poller.stop();
    expect(errors).toEqual([]);
  });
};
