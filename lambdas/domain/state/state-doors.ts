import type { Db } from '../../shared/clients';
import { AppError, ValidationError } from '../../shared/errors';
import type { DeviceState } from '../../schemas/state';
import { getDeviceOfWorkspace } from '../../stores/device-store';
import type { DeviceCaller, Forward } from '../registry/identities';
import { eventMessage } from '../webhooks/events';
import { getState, setReported } from './device-state';

/** What the device doors need for the state: the registry, the forward queue, and the count of a request as a `j/up` message. */
export interface StateDoorDeps {
  db: Db;
  forward: Forward;
  upMessage?: (caller: DeviceCaller) => Promise<void>;
}

/** The device's side of its state: desired, reported, delta, version (no times). */
const deviceSide = ({ desired, reported, delta, version }: DeviceState) => ({ desired, reported, delta, version });

/**
 * `GET /device/state`: the device's desired and reported state, their delta and version; counted as a `j/up` message.
 * @throws NotFoundError when the device no longer exists.
 */
export const getDeviceSideState = async (deps: StateDoorDeps, caller: DeviceCaller) => {
  await deps.upMessage?.(caller);
  return deviceSide(await getState(deps.db, caller));
};

/**
 * `POST /device/state` (and `#state` on `j/up`): the device reports its state, merged into its
 * reported keys (null removes one); counted as a `j/up` message. The registry stream emits the d2c
 * `status` event.
 * @throws ValidationError naming `<field>.<key>` when the report breaks the document rules: nothing is written.
 * @throws NotFoundError when the device no longer exists.
 */
export const reportDeviceState = async (deps: StateDoorDeps, caller: DeviceCaller, reported: Record<string, unknown>, field = 'body.reported') => {
  await deps.upMessage?.(caller);
  return deviceSide(await setReported(deps.db, caller, reported, { field }));
};

/**
 * The state's part of the MQTT `#status` answer (device-mqtt.md): each desired key in `expected`
 * and each reported key in `current`, as `"<key>": {"v": <value>}` (no prefix: clients that know
 * only jobs run only the `@` keys of `expected`).
 */
export const statusStateEntries = ({ desired, reported }: Pick<DeviceState, 'desired' | 'reported'>) => ({
  expected: Object.fromEntries(Object.entries(desired).map(([key, v]) => [key, { v }])),
  current: Object.fromEntries(Object.entries(reported).map(([key, v]) => [key, { v }])),
});

/**
 * A `#state` message on `j/up` (`{"reported": {…}}`): merged into the device's reported state. A bad
 * one (not `{"reported": {…}}`, too large, too deep, a bad key) is dropped and recorded as a d2c
 * `status` event with the `error` (and the field it names): nothing is written.
 * @returns why it was dropped, or undefined when it was kept.
 */
export const handleStateReport = async (deps: StateDoorDeps, caller: DeviceCaller, value: unknown): Promise<string | undefined> => {
  try {
    const reported = (value as { reported?: unknown } | null)?.reported;
    if (reported === undefined || Object.keys(value as object).length !== 1) {
      throw new ValidationError('Invalid state report: value.', { details: [{ field: 'value', message: 'A #state report is {"reported": {…}}.' }] });
    }
    await setReported(deps.db, caller, reported as Record<string, unknown>, { field: 'value.reported' });
    return undefined;
  } catch (error) {
    if (!(error instanceof AppError) || error.status >= 500) throw error;
    // A device deleted meanwhile: nothing to record it on.
    if (error.status === 404) return error.message;
    const [detail] = error.details;
    const device = await getDeviceOfWorkspace(deps.db, caller.workspaceId, caller.deviceId);
    if (device) {
      const place = { workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id };
      await deps.forward([eventMessage(place, 'status', 'd2c', { error: detail ? `${detail.field}: ${detail.message}` : error.message })]);
    }
    return error.message;
  }
};
