import { claimWorkerDynamoDbEngine } from './dynamodb-pool';

// A setup file of the contract, e2e and e2e-cloud projects, run before each test file's first
// import: the file claims its worker's DynamoDB Local from the run's pool, which restarts it first
// when the files before have left it a long stream log (test/helpers/dynamodb-pool.ts).
await claimWorkerDynamoDbEngine();
