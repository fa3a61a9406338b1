import { ATTEMPTS, lockRetry } from '../../../local/dynamodb-lock-retry';

/** DynamoDB Local's answer to a request that waited too long for an item's lock. */
const lockTimeout = () =>
  Object.assign(new Error('This action timed out because it too long waiting for a lock. This request will succeed in actual DynamoDB API'), {
    name: 'InternalServerError',
  });

/** A next step that fails with the given errors, one per call, then answers. */
const failing = (errors: Error[]) => {
  const calls: unknown[] = [];
  const next = async (args: unknown) => {
    calls.push(args);
    const error = errors[calls.length - 1];
    if (error) throw error;
    return { output: 'answered' };
  };
  return { next, calls };
};

describe("the local runtime's retry of DynamoDB Local's lock timeouts", () => {
  it('sends the request again until it is answered', async () => {
    const { next, calls } = failing([lockTimeout(), lockTimeout()]);

    await expect(lockRetry(next, { clientName: 'DynamoDBClient' })({ input: 1 })).resolves.toEqual({ output: 'answered' });
    expect(calls).toEqual([{ input: 1 }, { input: 1 }, { input: 1 }]);
  });

  it(`gives up after ${ATTEMPTS} attempts with the engine's error`, async () => {
    const { next, calls } = failing(Array.from({ length: ATTEMPTS + 1 }, lockTimeout));

    await expect(lockRetry(next, { clientName: 'DynamoDBClient' })({})).rejects.toThrow(/waiting for a lock/);
    expect(calls).toHaveLength(ATTEMPTS);
  });

  it('leaves any other error, and other services, to the caller at once', async () => {
    const conflict = Object.assign(new Error('Transaction cancelled'), { name: 'TransactionCanceledException' });
    const other = failing([conflict]);
    const sqs = failing([lockTimeout()]);

    await expect(lockRetry(other.next, { clientName: 'DynamoDBClient' })({})).rejects.toBe(conflict);
    await expect(lockRetry(sqs.next, { clientName: 'SQSClient' })({})).rejects.toThrow(/waiting for a lock/);
    expect([other.calls.length, sqs.calls.length]).toEqual([1, 1]);
  });
});
