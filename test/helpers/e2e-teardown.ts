/** Global teardown of the e2e project: stops the DynamoDB Local its global setup started. */
export default async () => {
  await (globalThis as { __e2eDynamo?: { stop: () => Promise<void> } }).__e2eDynamo?.stop();
};
