import type { Db } from '../../shared/clients';
import { MQTT_SESSION_CLOSE } from '../../shared/env';
import { disconnectDevice } from '../../stores/device-channel';
import { markClosedSessions, type ClosedSessions } from '../../stores/device-session-store';

/**
 * How long a close may take at most: the window's end until the close is done, so that a close
 * that never finishes (a crash, a failed DeleteConnection) drops the device's messages for this
 * long, not for ever.
 */
export const SESSION_CLOSE_BOUND_MS = 60_000;

/** How the MQTT door closes a device's connection, and whether the deployment has one. */
export interface SessionCloser {
  /** Closes the device's open connection, if any (IoT Core's DeleteConnection; locally the broker's client). */
  disconnect?: (deviceId: string) => Promise<unknown>;
  enabled?: boolean;
  now?: () => number;
}

/**
 * Closes a device's open MQTT session at once, because what let it in no longer holds since
 * `since` (an identity revoked; a device deleted). The device's locator is first marked with the
 * window [since, now + {@link SESSION_CLOSE_BOUND_MS}], then the connection is closed, then the
 * window ends at the close: the MQTT door's consumers drop what the broker received from the
 * device in it ({@link sentByClosedSession}), the messages that were still on their way when the
 * session was cut. The device may connect again at once, with credentials that still hold (the
 * authorizer refuses a revoked identity's token): whichever identity the closed session used, it
 * is closed, since a connection does not say which (the client ID is the device's).
 * @throws what the data plane or the table throws: the caller's request fails, and retrying it
 * (revocation is idempotent) closes again.
 */
export const closeDeviceSession = async (
  db: Db,
  deviceId: string,
  since: Date,
  { disconnect = disconnectDevice, enabled = MQTT_SESSION_CLOSE, now = Date.now }: SessionCloser = {},
) => {
  if (!enabled) return;
  const from = since.getTime();
  await markClosedSessions(db, deviceId, { from, to: now() + SESSION_CLOSE_BOUND_MS });
  await disconnect(deviceId);
  await markClosedSessions(db, deviceId, { from, to: now() });
};

/** Whether a message the broker received at `receivedAt` (Unix ms) came from a session closed in that window. */
export const sentByClosedSession = (closed: ClosedSessions | undefined, receivedAt: number) =>
  closed !== undefined && closed.from <= receivedAt && receivedAt <= closed.to;
