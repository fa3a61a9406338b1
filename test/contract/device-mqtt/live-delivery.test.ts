/**
 * Live delivery of scheduled jobs and FOTA from the registry stream's consumer, on DynamoDB Local's
 * real stream: every job written is published on j/dn to its device when that device was connected
 * when it was scheduled, once, and never for a record the stream retries.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import { eventMessage } from '../../../lambdas/domain/webhooks/events';
import { deliverScheduled, jobMessage } from '../../../lambdas/domain/doors/live-delivery';
import { forwardRegistryChanges, SEND_GROUP } from '../../../lambdas/domain/fleet-ops/registry-events';
import { scheduleFleetJob } from '../../../lambdas/domain/fleet-ops/jobs';
import type { Db } from '../../../lambdas/shared/clients';
import type { DownMessage } from '../../../lambdas/stores/device-channel';
import { setDeviceConnection } from '../../../lambdas/stores/device-mqtt-store';
import { startDynamoDbStreamPoller } from '../../../local/dynamodb-stream-poller';
import { until } from '../../../local/ports';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { scheduledWhole } from '../../helpers/fleets';

let db: Db;
beforeAll(async () => {
  db = await freshTable(undefined, { stream: true });
});

const recorder = () => {
  const published: Array<{ deviceId: string; message: DownMessage }> = [];
  return { published, publish: async (deviceId: string, message: DownMessage) => void published.push({ deviceId, message }) };
};

const devicesOf = async (count: number) => {
  const account = await newAccount(db);
  const devices = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      createDevice(db, account.caller, account.workspace_id, { name: `d${i}`, fleet_id: account.default_fleet_id, phys_id: '' }),
    ),
  );
  return { ...account, ids: devices.map((d) => d.id) };
};

/** A stream record of job `go` just scheduled on a device (the shape DynamoDB Local's stream gives). */
const jobRecord = (place: { workspace_id: string; fleet_id: string }, deviceId: string, seq: string): DynamoDBRecord => ({
  eventID: seq,
  eventName: 'INSERT',
  dynamodb: {
    SequenceNumber: seq,
    Keys: { pk: { S: `DEV#${deviceId}` }, sk: { S: 'JOB#go' } },
    NewImage: {
      pk: { S: `DEV#${deviceId}` },
      sk: { S: 'JOB#go' },
      name: { S: 'go' },
      device_id: { S: deviceId },
      status: { S: 'pending' },
      scheduled_at: { S: '2026-11-22T11:00:00.000Z' },
      value: { S: '{}' },
      workspace_id: { S: place.workspace_id },
      fleet_id: { S: place.fleet_id },
      event_ts: { S: '2026-11-22T11:00:00.000000Z' },
    },
  },
});

describe('deliverScheduled', () => {
  it('publishes c2d jobs and FOTA whose devices were connected when scheduled, and nothing else', async () => {
    const place = (device_id: string) => ({ workspace_id: 'wks-1', fleet_id: 'flt-1', device_id });
    const job = { name: 'reboot', status: 'pending', scheduled_at: '2026-11-22T11:00:00.000Z', value: { delay: 1 } };
    const fota = { scheduled_at: '2026-11-22T11:00:00.000Z', status: 'pending', value: { firmware_id: 'fw', firmware_version: '2.0' } };
    const { published, publish } = recorder();

    await deliverScheduled(
      publish,
      [
        { event: eventMessage(place('dev-on'), 'job', 'c2d', job), live: true },
        { event: eventMessage(place('dev-on'), 'fota', 'c2d', fota), live: true },
        { event: eventMessage(place('dev-off'), 'job', 'c2d', job), live: false },
        { event: eventMessage(place('dev-on'), 'job', 'd2c', { ...job, status: 'done', result: {} }), live: true },
      ],
      true,
    );

    expect(published).toEqual([
      { deviceId: 'dev-on', message: jobMessage('reboot', { delay: 1 }) },
      { deviceId: 'dev-on', message: { key: '@fota', value: { args: { firmware_id: 'fw', firmware_version: '2.0', fw_version: '2.0' } } } },
    ]);
  });

  it('publishes nothing when live delivery is off, and a failing publish fails nothing', async () => {
    const { published, publish } = recorder();
    const event = eventMessage({ workspace_id: 'wks-1', fleet_id: 'flt-1', device_id: 'dev-1' }, 'job', 'c2d', { name: 'a', value: {} });

    await deliverScheduled(publish, [{ event, live: true }], false);
    await expect(deliverScheduled(async () => Promise.reject(new Error('broker down')), [{ event, live: true }], true)).resolves.toBeUndefined();

    expect(published).toEqual([]);
  });
});

describe('the registry stream’s consumer with live delivery', () => {
  const STREAM_BATCH = 8;
  const FLEET_SIZE = 3 * STREAM_BATCH;
  it('publishes a fleet-wide job to each connected device once, from the stream, and not to the others', async () => {
    // Enough devices for the job's records to span three of the poller's batches (STREAM_BATCH).
    const account = await devicesOf(FLEET_SIZE);
    const connected = account.ids.filter((_, i) => i % 3 === 0);
    for (const id of connected) await setDeviceConnection(db, account.workspace_id, id, true, '2026-11-22T10:00:00.000Z', 1);
    const { published, publish } = recorder();
    const poller = await startDynamoDbStreamPoller({
      tableName: db.table,
      batchSize: STREAM_BATCH,
      maxBatchingWindowMs: 50,
      retryAttempts: 0,
      bisectBatchOnError: false,
      timeoutMs: 10_000,
      functionName: 'registry-stream',
      handler: async (event) => {
        const failed = await forwardRegistryChanges(
          { db, forward: async () => undefined, concurrency: 4, deliver: (changes) => deliverScheduled(publish, changes, true) },
          event.Records,
        );
        return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
      },
      startingPosition: 'LATEST',
    });
    try {
      const job = await scheduledWhole('job', scheduleFleetJob(db, account.caller, account.workspace_id, 'wave', { n: 1 }));

      expect(job.devices).toHaveLength(FLEET_SIZE);
      await until(async () => published.length >= connected.length, 'the live deliveries', 20_000);
      const marker = await scheduledWhole('job', scheduleFleetJob(db, account.caller, account.workspace_id, 'marker', {}));
      await until(async () => published.filter((p) => p.message.key === '@marker').length >= connected.length, 'the marker deliveries', 20_000);
      expect(marker.devices).toHaveLength(FLEET_SIZE);
    } finally {
      await poller.stop();
    }
    const waves = published.filter((p) => p.message.key === '@wave');
    expect(waves.map((p) => p.deviceId).sort()).toEqual(connected.slice().sort());
    expect(waves.every((p) => JSON.stringify(p.message) === JSON.stringify(jobMessage('wave', { n: 1 })))).toBe(true);
  });

  it('delivers only the records before the one the stream retries from', async () => {
    const { workspace_id, default_fleet_id, ids } = await devicesOf(3);
    for (const id of ids) await setDeviceConnection(db, workspace_id, id, true, '2026-11-22T10:00:00.000Z', 1);
    const record = (deviceId: string, seq: string) => jobRecord({ workspace_id, fleet_id: default_fleet_id }, deviceId, seq);
    const delivered: string[][] = [];
    let sends = 0;

    const failed = await forwardRegistryChanges(
      {
        db,
        // The second group of events (SEND_GROUP records each) is refused: the stream retries from its first record.
        forward: async () => {
          if (sends++ === 1) throw new Error('queue refused');
        },
        concurrency: 1,
        deliver: async (changes) => void delivered.push(changes.map((c) => c.event.device_id)),
      },
      [...Array.from({ length: SEND_GROUP }, () => record(ids[0], '1')), record(ids[1], '101'), record(ids[2], '102')],
    );

    expect(failed).toBe('101');
    expect(delivered).toEqual([Array(SEND_GROUP).fill(ids[0])]);
  });

  it('publishes no group after one that was refused, though it was sent at the same time', async () => {
    const { workspace_id, default_fleet_id, ids } = await devicesOf(3);
    const place = { workspace_id, fleet_id: default_fleet_id };
    const delivered: string[][] = [];
    let sends = 0;

    const failed = await forwardRegistryChanges(
      {
        db,
        forward: async (events) => {
          sends += 1;
          if (events[0].device_id === ids[1]) throw new Error('queue refused');
        },
        concurrency: 3,
        deliver: async (changes) => void delivered.push(changes.map((c) => c.event.device_id)),
      },
      ids.flatMap((id, g) => Array.from({ length: SEND_GROUP }, (_, i) => jobRecord(place, id, String(g * SEND_GROUP + i + 1)))),
    );

    expect(sends).toBe(3);
    expect(failed).toBe(String(SEND_GROUP + 1));
    expect(delivered).toEqual([Array(SEND_GROUP).fill(ids[0])]);
  });

  it('publishes a group of records once it and the groups before it are sent, while later groups are still being sent', async () => {
    const { workspace_id, default_fleet_id, ids } = await devicesOf(2);
    const place = { workspace_id, fleet_id: default_fleet_id };
    const delivered: string[][] = [];
    let sends = 0;

    const failed = await forwardRegistryChanges(
      {
        db,
        // The second group's send ends only once the first group is published: publishing after every send never gets there.
        forward: async () => {
          if (sends++ === 1) await until(() => delivered.length >= 1, 'the first group published', 5000);
        },
        concurrency: 2,
        deliver: async (changes) => void delivered.push(changes.map((c) => c.event.device_id)),
      },
      [...Array.from({ length: SEND_GROUP }, (_, i) => jobRecord(place, ids[0], String(i + 1))), jobRecord(place, ids[1], String(SEND_GROUP + 1))],
    );

    expect(failed).toBeUndefined();
    expect(delivered).toEqual([Array(SEND_GROUP).fill(ids[0]), [ids[1]]]);
  });
});
