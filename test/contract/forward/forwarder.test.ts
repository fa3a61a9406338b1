import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { dataMessage, eventMessage } from '../../../lambdas/domain/webhooks/events';
import { packForward } from '../../../lambdas/domain/webhooks/forward-pack';
import { forwardMessages, MAX_POST_BYTES, ORIGIN_ID_ATTRIBUTE, type QueuedMessage } from '../../../lambdas/domain/webhooks/forwarding';
import { createIntegration, getIntegration, rotateIntegrationSecret } from '../../../lambdas/domain/webhooks/integrations';
import { getWorkspaceUsage, recordUsage } from '../../../lambdas/domain/limits/usage';
import { webhookPoster } from '../../../lambdas/shared/webhook-client';
import type { ForwardMessage } from '../../../lambdas/schemas/forward';
import { toQueueBody } from '../../../lambdas/shared/json';
import type { CreateIntegrationBody } from '../../../lambdas/schemas/integration';
import type { Db } from '../../../lambdas/shared/clients';
import type { Caller } from '../../../lambdas/shared/http';
import { waitFor } from '../../../local/ports';
import { startSqsPoller } from '../../../local/sqs-poller';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { depthOf, freshQueue, receiveAll, sendRaw, sqsClient, type TestQueue } from '../../helpers/sqs';
import { verifySignature, webhookReceivers } from '../../helpers/webhook-receiver';

let db: Db;
const receivers = webhookReceivers();
beforeAll(async () => {
  db = await freshTable();
});
afterAll(async () => {
  await receivers.stopAll();
});

const receiver = receivers.start;

const LOCAL = { allowPrivateTargets: true };

const integrationOf = async (caller: Caller, workspaceId: string, url: string, settings: Partial<CreateIntegrationBody> = {}) =>
  createIntegration(db, caller, workspaceId, { name: 'hook', url, data: true, events: true, tags: [], enabled: true, ...settings }, LOCAL);

const place = (workspace_id: string) => ({ workspace_id, fleet_id: 'flt-aaaaaaaaaaaaaaaaaaaa', device_id: 'dev-aaaaaaaaaaaaaaaaaaaa' });

const point = (workspace_id: string, tag: string, n: number, payload: unknown = { n }) =>
  dataMessage({ ...place(workspace_id), tag, timestamp_device: `2024-01-01T00:00:0${n}.000Z`, timestamp_in: '2024-01-01T00:01:00.000Z', payload }, 'sensor');

const event = (workspace_id: string, n: number) => eventMessage(place(workspace_id), 'job', 'c2d', { name: `job${n}` }, `2024-01-01T00:00:00.00000${n}Z`);

/** Puts bodies on a fresh queue and receives them, as the forwarder would get them. */
const enqueue = async (bodies: string[], queue?: TestQueue): Promise<{ queue: TestQueue; queued: QueuedMessage[] }> => {
  const q = queue ?? (await freshQueue());
  await sendRaw(q.url, bodies);
  const received = await receiveAll(q.url);
  return {
    queue: q,
    queued: received.map((m) => ({ messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body!, receiveCount: 1 })),
  };
};

const forward = (queued: QueuedMessage[], queue: TestQueue, timeoutMs = 2000) =>
  forwardMessages(db, queued, {
    post: webhookPoster({ timeoutMs, allowPrivate: true }),
    queueUrl: queue.url,
    retry: { baseSeconds: 3600, maxSeconds: 3600 },
    concurrency: 4,
    recordUsage: (tally) => recordUsage(db, tally),
  });

const json = (messages: ForwardMessage[]) => messages.map(toQueueBody);

/** In-flight messages of a fauxqs queue with their visibility deadlines (fauxqs's inspection endpoint). */
const inFlight = async (queue: TestQueue) => {
  const name = queue.url.split('/').at(-1);
  const state = (await (await fetch(`${process.env.AWS_ENDPOINT_URL_SQS}/_fauxqs/queues/${name}`)).json()) as {
    messages: { inflight: Array<{ visibilityDeadline: number }> };
  };
  return state.messages.inflight;
};

describe('the forwarder on DynamoDB Local, fauxqs and a real receiver', () => {
  it('posts one signed batch per kind with entry ids "0", "1", … and exactly the interface’s fields', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver();
    const { secret, integration } = await integrationOf(caller, workspace_id, hook.url);
    const { queue, queued } = await enqueue(
      json([point(workspace_id, 'temp', 1), event(workspace_id, 1), point(workspace_id, 'temp', 2), event(workspace_id, 2)]),
    );

    const failed = await forward(queued, queue);

    expect(failed).toEqual([]);
    expect(hook.posts).toHaveLength(2);
    const data = hook.posts.find((p) => p.headers['x-fleetstream-kind'] === 'data')!;
    const events = hook.posts.find((p) => p.headers['x-fleetstream-kind'] === 'events')!;
    expect(data.body.result.map((e) => e.id)).toEqual(['0', '1']);
    expect(Object.keys(data.body.result[0]).sort()).toEqual(
      ['id', 'workspace_id', 'fleet_id', 'device_id', 'device_name', 'timestamp_device', 'timestamp_in', 'tag', 'payload'].sort(),
    );
    expect(data.body.result.map((e) => e.payload).sort((a: any, b: any) => a.n - b.n)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(Object.keys(events.body.result[0]).sort()).toEqual(['id', 'ts', 'workspace_id', 'fleet_id', 'device_id', 'type', 'direction', 'payload'].sort());
    expect(events.body.result[0]).toEqual(expect.objectContaining({ type: 'job', direction: 'c2d', workspace_id }));
    expect(typeof data.body.batch_id).toBe('string');
    expect(data.headers['x-fleetstream-batch-id']).toBe(data.body.batch_id);
    expect(data.headers['x-fleetstream-integration-id']).toBe(integration.id);
    expect(hook.posts.every((p) => verifySignature(secret, p.headers, p.raw))).toBe(true);
    expect(verifySignature('whsec_wrong', data.headers, data.raw)).toBe(false);
    expect((await getIntegration(db, caller, workspace_id, integration.id)).status).toEqual(
      expect.objectContaining({ last_delivery_at: expect.any(String), consecutive_failures: 0, last_error: null }),
    );
    expect(await depthOf(queue.url)).toEqual({ visible: 0, inFlight: 4, delayed: 0 });
  });

  it('sends each integration only what it asks for: kind, tag filter, enabled flag, own workspace', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const other = await newAccount(db);
    const [temps, events, disabled, elsewhere] = await Promise.all([receiver(), receiver(), receiver(), receiver()]);
    await integrationOf(caller, workspace_id, temps.url, { events: false, tags: ['temp'] });
    await integrationOf(caller, workspace_id, events.url, { data: false });
    await integrationOf(caller, workspace_id, disabled.url, { enabled: false });
    await integrationOf(other.caller, other.workspace_id, elsewhere.url);
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1), point(workspace_id, 'humidity', 2), event(workspace_id, 3)]));

    await forward(queued, queue);

    expect(temps.accepted().map((e) => e.tag)).toEqual(['temp']);
    expect(events.accepted().map((e) => e.type)).toEqual(['job']);
    expect([disabled.posts.length, elsewhere.posts.length]).toEqual([0, 0]);
  });

  it('retries only what a failing integration missed, backs it off, and the retry skips the integration that got it', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const [healthy, broken] = await Promise.all([receiver(), receiver(() => 500)]);
    await integrationOf(caller, workspace_id, healthy.url);
    const { integration: brokenIntegration } = await integrationOf(caller, workspace_id, broken.url, { events: false });
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1), event(workspace_id, 2)]));
    const dataId = queued.find((q) => q.body.includes('"kind":"data"'))!.messageId;

    const failed = await forward(queued, queue);

    expect(failed).toEqual([dataId]);
    expect(healthy.accepted()).toHaveLength(2);
    const status = (await getIntegration(db, caller, workspace_id, brokenIntegration.id)).status;
    expect(status).toEqual(expect.objectContaining({ consecutive_failures: 1, last_error: 'HTTP 500', last_delivery_at: null }));
    // the failed message is hidden for the backoff (3600 s here), not for the queue's 30 s
    const hidden = (await inFlight(queue)).map((m) => m.visibilityDeadline - Date.now()).sort((a, b) => b - a);
    expect(hidden[0]).toBeGreaterThan(3000_000);

    broken.behave(() => 200);
    const retry = queued.filter((q) => q.messageId === dataId).map((q) => ({ ...q, receiveCount: 2 }));
    const again = await forward(retry, queue);

    expect(again).toEqual([]);
    expect(healthy.accepted()).toHaveLength(2);
    expect(broken.accepted().map((e) => e.tag)).toEqual(['temp']);
    expect((await getIntegration(db, caller, workspace_id, brokenIntegration.id)).status.consecutive_failures).toBe(0);
    // Every POST counted in the workspace's usage of the day: two delivered at first (data and events
    // to the healthy receiver), one failed, then the retry delivered.
    const today = new Date().toISOString().slice(0, 10);
    const { totals } = await getWorkspaceUsage(db, caller, workspace_id, { start: today, end: today });
    expect(totals).toMatchObject({ webhook_deliveries: 3, webhook_failures: 1 });
  });

  it('delivers packed messages as the interface’s batches, and retries a pack only to the integration that failed it', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const [healthy, broken] = await Promise.all([receiver(), receiver(() => 500)]);
    await integrationOf(caller, workspace_id, healthy.url);
    await integrationOf(caller, workspace_id, broken.url, { events: false, tags: ['temp'] });
    const messages = Array.from({ length: 60 }, (_, n) => [
      point(workspace_id, n % 2 ? 'temp' : 'humidity', n % 10, { n }),
      event(workspace_id, n % 10),
    ]).flat();
    const bodies = packForward(messages);
    expect(bodies).toHaveLength(2); // one pack of points, one of events
    const { queue, queued } = await enqueue(bodies);
    const dataPack = queued.find((q) => q.body.includes('"of":"data"'))!;

    const failed = await forward(queued, queue);

    expect(failed).toEqual([dataPack.messageId]);
    expect(healthy.posts).toHaveLength(2);
    for (const post of healthy.posts) expect(post.body.result.map((e) => e.id)).toEqual(post.body.result.map((_, i) => String(i)));
    expect(
      healthy
        .accepted()
        .filter((e) => 'tag' in e)
        .map((e) => (e.payload as { n: number }).n),
    ).toEqual(Array.from({ length: 60 }, (_, n) => n));
    expect(healthy.accepted().filter((e) => 'type' in e)).toHaveLength(60);

    broken.behave(() => 200);
    const again = await forward([{ ...dataPack, receiveCount: 2 }], queue);

    expect(again).toEqual([]);
    expect(healthy.posts).toHaveLength(2); // already reached: skipped
    expect(broken.accepted().map((e) => e.tag)).toEqual(Array.from({ length: 30 }, () => 'temp'));
  });

  it('parses a redelivered pack’s lines, and takes one no receiver can read for poison instead of POSTing it again', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver();
    await integrationOf(caller, workspace_id, hook.url);
    const [pack] = packForward([point(workspace_id, 'temp', 1), point(workspace_id, 'temp', 2)]);
    // An entry's shape without its substance: only parsing tells.
    const broken = pack.replace(/\n[^\n]*$/, '\n{"workspace_id":}');
    const { queue, queued } = await enqueue([broken]);

    // First delivery: the lines are copied as they are, and the receiver refuses the body.
    expect(await forward(queued, queue)).toEqual([queued[0].messageId]);
    expect(hook.posts.map((p) => p.status)).toEqual([400]);
    expect((await depthOf(queue.url)).visible).toBe(0); // backing off

    // Redelivery: parsed, refused as poison, made visible at once (on its way to the DLQ), not POSTed.
    expect(await forward([{ ...queued[0], receiveCount: 2 }], queue)).toEqual([queued[0].messageId]);
    expect(hook.posts).toHaveLength(1);
    expect((await depthOf(queue.url)).visible).toBe(1);
  });

  it('retries a message to an integration that took one of its POSTs and failed another', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver((post) => (post.headers['x-fleetstream-kind'] === 'events' ? 503 : 200));
    await integrationOf(caller, workspace_id, hook.url);
    // A pack of both kinds (the producers keep kinds apart; the forwarder must not rely on it).
    const mixed = toQueueBody({ kind: 'pack', entries: [point(workspace_id, 'temp', 1), event(workspace_id, 1)] });
    const { queue, queued } = await enqueue([mixed]);

    expect(await forward(queued, queue)).toEqual([queued[0].messageId]);
    hook.behave(() => 200);
    expect(await forward([{ ...queued[0], receiveCount: 2 }], queue)).toEqual([]);

    // The retry went to the same integration again, events included (the points twice: at least once).
    expect(hook.accepted().filter((e) => 'type' in e)).toHaveLength(1);
    expect(hook.accepted().filter((e) => 'tag' in e)).toHaveLength(2);
  });

  it('skips the integrations a message replayed from the DLQ already reached', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const [healthy, broken] = await Promise.all([receiver(), receiver(() => 503)]);
    await integrationOf(caller, workspace_id, healthy.url);
    await integrationOf(caller, workspace_id, broken.url);
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1)]));
    await forward(queued, queue);
    broken.behave(() => 200);

    const replayed = { ...queued[0], messageId: 'a-new-id-after-replay', originId: queued[0].messageId };
    await forward([replayed], queue);

    expect([healthy.accepted().length, broken.accepted().length]).toEqual([1, 1]);
    expect(ORIGIN_ID_ATTRIBUTE).toBe('origin-message-id');
  });

  it('counts a receiver that does not answer in time as failed and says so in the status', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const slow = await receiver(() => 'hang');
    const { integration } = await integrationOf(caller, workspace_id, slow.url);
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1)]));

    const failed = await forward(queued, queue, 300);

    expect(failed).toHaveLength(1);
    expect((await getIntegration(db, caller, workspace_id, integration.id)).status.last_error).toBe('no answer within 300 ms');
  });

  it('leaves the POSTs it has no time left to start to a retry, and says nothing about their receivers', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver();
    const { integration } = await integrationOf(caller, workspace_id, hook.url);
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1)]));

    const failed = await forwardMessages(db, queued, {
      post: webhookPoster({ timeoutMs: 1000, allowPrivate: true }),
      queueUrl: queue.url,
      retry: { baseSeconds: 1, maxSeconds: 1 },
      concurrency: 4,
      startPostsBefore: Date.now() - 1,
    });

    expect(failed).toEqual([queued[0].messageId]);
    expect(hook.posts).toEqual([]);
    expect((await getIntegration(db, caller, workspace_id, integration.id)).status).toEqual(integration.status);
  });

  it('splits a batch whose POST would exceed the size limit', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver();
    await integrationOf(caller, workspace_id, hook.url, { events: false });
    const big = 'x'.repeat(MAX_POST_BYTES / 3);
    const messages = [1, 2, 3, 4].map((n) => point(workspace_id, 'blob', n, { big }));
    const queued = messages.map((m, i) => ({ messageId: `m${i}`, receiptHandle: `r${i}`, body: toQueueBody(m), receiveCount: 1 }));

    const failed = await forward(queued, await freshQueue());

    expect(failed).toEqual([]);
    expect(hook.posts.length).toBeGreaterThan(1);
    expect(hook.posts.every((p) => Buffer.byteLength(p.raw) <= MAX_POST_BYTES)).toBe(true);
    expect(hook.accepted()).toHaveLength(4);
  });

  it('signs with both secrets after a rotation, each verifiable', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const hook = await receiver();
    const created = await integrationOf(caller, workspace_id, hook.url);
    const rotated = await rotateIntegrationSecret(db, caller, workspace_id, created.integration.id);
    const { queue, queued } = await enqueue(json([point(workspace_id, 'temp', 1)]));

    await forward(queued, queue);

    const [post] = hook.posts;
    expect(String(post.headers['x-fleetstream-signature']).split(',')).toHaveLength(2);
    expect(verifySignature(rotated.secret, post.headers, post.raw)).toBe(true);
    expect(verifySignature(created.secret, post.headers, post.raw)).toBe(true);
  });

  it('sends a message that is not a forward message to the DLQ after maxReceiveCount quick receives, and delivers the rest', async () => {
    const { caller, workspace_id } = await newAccount(db);
    // Not JSON; JSON that is no forward message; a pack whose header counts fewer entries than it holds.
    const [pack] = packForward([point(workspace_id, 'temp', 3), point(workspace_id, 'temp', 4)]);
    const malformed = ['not json', JSON.stringify({ kind: 'data', workspace_id }), pack.replace('"count":2', '"count":1')];
    const hook = await receiver();
    await integrationOf(caller, workspace_id, hook.url);
    const queue = await freshQueue({ visibilityTimeoutSeconds: 600, maxReceiveCount: 3 });
    const poller = startSqsPoller({
      queueUrl: queue.url,
      queueArn: queue.arn,
      batchSize: 10,
      maxBatchingWindowMs: 100,
      timeoutMs: 5000,
      functionName: 'forwarder',
      onError: () => undefined,
      handler: async (e) => {
        const messages = e.Records.map((r) => ({
          messageId: r.messageId,
          receiptHandle: r.receiptHandle,
          body: r.body,
          receiveCount: Number(r.attributes.ApproximateReceiveCount),
        }));
        const failed = await forward(messages, queue);
        return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
      },
    });
    try {
      await sendRaw(queue.url, [...malformed, ...json([point(workspace_id, 'temp', 1)]), ...packForward([point(workspace_id, 'hum', 2)])]);

      // the queue's visibility timeout is 10 minutes: only the immediate release gets them there now
      await waitFor(
        async () => {
          if ((await depthOf(queue.dlqUrl)).visible !== malformed.length) throw new Error('not yet in the DLQ');
        },
        'the malformed messages in the DLQ',
        20_000,
      );
    } finally {
      await poller.stop();
    }

    expect(
      hook
        .accepted()
        .map((e) => e.tag)
        .sort(),
    ).toEqual(['hum', 'temp']);
    const dead = await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: queue.dlqUrl, MaxNumberOfMessages: 10 }));
    expect(dead.Messages?.map((m) => m.Body).sort()).toEqual([...malformed].sort());
  });
});
