import type { Config } from '@jest/types';
import { startDynamoDbPool } from './dynamodb-pool';

/**
 * Global setup of the e2e project: a DynamoDB Local per jest worker for the whole run
 * (test/helpers/dynamodb-pool.ts), which every runtime a test file starts uses, each on tables of
 * its own. Starting the JVMs once instead of once per file saves seconds of CPU per file.
 */
export default async (globalConfig: Config.GlobalConfig) => {
  await startDynamoDbPool(globalConfig);
};
