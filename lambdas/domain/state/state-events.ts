import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { isDeepStrictEqual } from 'node:util';
import type { EventMessage } from '../../schemas/forward';
import type { DownMessage } from '../../stores/device-channel';
import type { StoredDeviceState } from '../../stores/device-state-store';
import { eventMessage, eventTimestamp } from '../webhooks/events';
import { changedKeys } from './document';

type Image = Record<string, AttributeValue>;
type DeviceImage = { id: string; workspace_id: string; fleet_id: string; connected?: boolean; state?: Partial<StoredDeviceState> };

const imageOf = (image: unknown) => (image ? (unmarshall(image as Image) as DeviceImage) : undefined);

/** A state event the registry stream makes of a device item's change, and whether its device is connected (live `#state`). */
export interface StateChange {
  event: EventMessage;
  live: boolean;
}

/**
 * The `status` events of a device item's change of state (spec/fleet-state.md §3): a change of
 * the desired state (a new `state.version`) is a c2d event `{desired: {changed keys; null for
 * removed}, version}`, to publish on `j/dn` when the device is connected; a change of the reported
 * state a d2c event `{reported: {changed}}`. None for other items or other changes. Pure: no request.
 */
export const stateChangesOf = (record: DynamoDBRecord): StateChange[] => {
  const keys = record.dynamodb?.Keys;
  if (!keys?.pk?.S?.startsWith('WKS#') || !keys.sk?.S?.startsWith('DEV#')) return [];
  if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') return [];
  const after = imageOf(record.dynamodb?.NewImage);
  if (!after?.state || typeof after.fleet_id !== 'string') return [];
  const before = imageOf(record.dynamodb?.OldImage)?.state;
  const place = { workspace_id: after.workspace_id, fleet_id: after.fleet_id, device_id: after.id };
  const changes: StateChange[] = [];
  const version = after.state.version ?? 0;
  if (version !== (before?.version ?? 0)) {
    const desired = changedKeys(before?.desired, after.state.desired);
    changes.push({ event: eventMessage(place, 'status', 'c2d', { desired, version }, eventTimestamp()), live: after.connected === true });
  }
  if (!isDeepStrictEqual(before?.reported ?? {}, after.state.reported ?? {})) {
    changes.push({ event: eventMessage(place, 'status', 'd2c', { reported: changedKeys(before?.reported, after.state.reported) }), live: false });
  }
  return changes;
};

/** The live `#state` message of a c2d `status` event of a desired change, undefined for any other event. */
export const stateMessageOf = (event: EventMessage): DownMessage | undefined => {
  if (event.type !== 'status' || event.direction !== 'c2d') return undefined;
  const { desired, version } = event.payload as { desired?: Record<string, unknown>; version?: number };
  return desired && version !== undefined ? { key: '#state', value: { desired, version } } : undefined;
};
