import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { downMessageOf } from '../../../../lambdas/domain/doors/live-delivery';
import { stateChangesOf } from '../../../../lambdas/domain/state/state-events';

const device = (state?: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  pk: 'WKS#wks-1',
  sk: 'DEV#dev-1',
  id: 'dev-1',
  workspace_id: 'wks-1',
  fleet_id: 'flt-1',
  ...(state ? { state } : {}),
  ...extra,
});
const record = (before: Record<string, unknown> | undefined, after: Record<string, unknown>): DynamoDBRecord =>
  ({
    eventName: before ? 'MODIFY' : 'INSERT',
    dynamodb: {
      Keys: marshall({ pk: after.pk, sk: after.sk }),
      ...(before ? { OldImage: marshall(before) } : {}),
      NewImage: marshall(after),
    },
  }) as DynamoDBRecord;
const state = (desired: object, reported: object, version: number) => ({ desired, reported, version, desired_at: {}, reported_at: {} });

describe('the registry stream’s state events', () => {
  it('makes a new desired version a c2d status event of the changed keys, live when the device is connected, and its #state message', async () => {
    const [change] = stateChangesOf(record(device(state({ a: 1, b: 2 }, {}, 1)), device(state({ a: 1, c: 3 }, {}, 2), { connected: true })));

    expect(change.live).toBe(true);
    expect(change.event).toMatchObject({
      type: 'status',
      direction: 'c2d',
      device_id: 'dev-1',
      fleet_id: 'flt-1',
      payload: { desired: { b: null, c: 3 }, version: 2 },
    });
    expect(await downMessageOf(change.event)).toEqual({ key: '#state', value: { desired: { b: null, c: 3 }, version: 2 } });
  });

  it('makes a change of reported a d2c status event of the changed keys, never published', async () => {
    const changes = stateChangesOf(record(device(state({}, { a: 1 }, 0)), device(state({}, { a: 2, b: true }, 0), { connected: true })));

    expect(changes.map((c) => [c.event.direction, c.event.payload, c.live])).toEqual([['d2c', { reported: { a: 2, b: true } }, false]]);
    expect(await downMessageOf(changes[0].event)).toBeUndefined();
  });

  it('makes nothing of other changes of a device item (a connection, a rename) or of items without a state', () => {
    const s = state({ a: 1 }, { a: 1 }, 1);

    expect(stateChangesOf(record(device(s), device(s, { connected: true, name: 'x' })))).toEqual([]);
    expect(stateChangesOf(record(device(), device(undefined, { connected: true })))).toEqual([]);
  });
});
