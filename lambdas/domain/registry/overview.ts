import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { NON_COMPLIANT_KEYS_MAX, SILENT_AFTER_DEFAULT, type Overview, type OverviewCounts } from '../../schemas/overview';
import { readOpenAlarmCounts } from '../../stores/alarm-store';
import { readDeviceHealthPages, type DeviceHealth } from '../../stores/device-health-store';
import { readFleetsOfWorkspace } from '../../stores/fleet-store';
import { listIntegrationsOfWorkspace } from '../../stores/integration-store';
import { readRolloutsOfWorkspace } from '../../stores/rollout-store';
import { hasEnded, toRollout } from '../fleet-ops/rollouts';
import { deltaOf } from '../state/document';
import { requireWorkspace } from '../tenancy/workspaces';

/** The name firmware counts go under for devices whose version is not known. */
export const UNKNOWN_FIRMWARE = 'unknown';

/** Running counts of a set of devices: flat memory per fleet (a map of its firmware versions). */
class Tally {
  devices = 0;
  online = 0;
  silent = 0;
  never_seen = 0;
  readonly firmware = new Map<string, number>();

  add(device: DeviceHealth, silentBefore: string) {
    this.devices++;
    if (device.connected === true) this.online++;
    if (device.last_seen_at === undefined) this.never_seen++;
    else if (device.last_seen_at < silentBefore) this.silent++;
    const version = device.firmware_version ?? UNKNOWN_FIRMWARE;
    this.firmware.set(version, (this.firmware.get(version) ?? 0) + 1);
  }

  counts(): OverviewCounts {
    return {
      devices: this.devices,
      online: this.online,
      offline: this.devices - this.online,
      silent: this.silent,
      never_seen: this.never_seen,
      firmware: [...this.firmware]
        .map(([version, devices]) => ({ version, devices }))
        .sort((a, b) => b.devices - a.devices || a.version.localeCompare(b.version)),
    };
  }
}

/** Devices not yet compliant with their desired state, and the keys they have not applied. */
class Compliance {
  devices = 0;
  readonly keys = new Map<string, number>();

  add(device: DeviceHealth) {
    const missing = Object.keys(deltaOf(device.state?.desired, device.state?.reported));
    if (!missing.length) return;
    this.devices++;
    for (const key of missing) this.keys.set(key, (this.keys.get(key) ?? 0) + 1);
  }

  counts(): Overview['non_compliant'] {
    const keys = [...this.keys].map(([key, devices]) => ({ key, devices })).sort((a, b) => b.devices - a.devices || a.key.localeCompare(b.key));
    return { devices: this.devices, keys: keys.slice(0, NON_COMPLIANT_KEYS_MAX) };
  }
}

/** The workspace's fleets by ID (in ID order), each with a tally. */
const fleetTallies = async (db: Db, workspaceId: string) => {
  const fleets = new Map<string, { name: string; tally: Tally }>();
  for await (const { value } of readFleetsOfWorkspace(db, workspaceId, {})) fleets.set(value.id, { name: value.name, tally: new Tally() });
  return fleets;
};

/** The workspace's device counts, in total and per fleet (every fleet, empty ones too): one pass over its devices, projected. */
const countDevices = async (db: Db, workspaceId: string, silentBefore: string) => {
  const totals = new Tally();
  const compliance = new Compliance();
  const fleets = await fleetTallies(db, workspaceId);
  for await (const page of readDeviceHealthPages(db, workspaceId)) {
    for (const device of page) {
      totals.add(device, silentBefore);
      compliance.add(device);
      let fleet = fleets.get(device.fleet_id);
      // A fleet created during the pass: counted under its ID.
      if (!fleet) fleets.set(device.fleet_id, (fleet = { name: '', tally: new Tally() }));
      fleet.tally.add(device, silentBefore);
    }
  }
  return { totals, fleets, compliance };
};

/** Rollouts that have not ended, newest first (every rollout of the workspace is read: ended ones are skipped). */
const openRollouts = async (db: Db, workspaceId: string) => {
  const open = [];
  for await (const { value } of readRolloutsOfWorkspace(db, workspaceId, {})) if (!hasEnded(value.record)) open.push(toRollout(value));
  return open;
};

/** Integrations whose last delivery failed, most consecutive failures first. */
const failingWebhooks = async (db: Db, workspaceId: string) =>
  (await listIntegrationsOfWorkspace(db, workspaceId))
    .filter((i) => (i.consecutive_failures ?? 0) > 0)
    .map((i) => ({
      id: i.id,
      name: i.name,
      enabled: i.enabled,
      consecutive_failures: i.consecutive_failures ?? 0,
      last_error: i.last_error ?? null,
      last_error_at: i.last_error_at ?? null,
      last_delivery_at: i.last_delivery_at ?? null,
    }))
    .sort((a, b) => b.consecutive_failures - a.consecutive_failures);

/**
 * A workspace at a glance: its devices online, offline, silent (no data point for longer than
 * `silentAfterSeconds`) and their firmware versions, in total and per fleet; its rollouts not
 * ended; its failing webhooks; its devices not yet compliant with their desired state; its alarms
 * not closed by severity (kept counted by their transitions: one read). Counted now,
 * in one streamed pass over the devices (a projection of seven attributes: memory is flat, reads
 * grow with the devices: docs/console.md, "Overview").
 * @throws NotFoundError when the workspace is not the caller's.
 */
export const getOverview = async (db: Db, caller: Caller, workspaceId: string, { silentAfterSeconds = SILENT_AFTER_DEFAULT } = {}): Promise<Overview> => {
  await requireWorkspace(db, caller, workspaceId);
  const now = Date.now();
  const silentBefore = new Date(now - silentAfterSeconds * 1000).toISOString();
  const [{ totals, fleets, compliance }, rollouts, webhooks, alarms] = await Promise.all([
    countDevices(db, workspaceId, silentBefore),
    openRollouts(db, workspaceId),
    failingWebhooks(db, workspaceId),
    readOpenAlarmCounts(db, workspaceId),
  ]);
  return {
    workspace_id: workspaceId,
    at: new Date(now).toISOString(),
    silent_after: silentAfterSeconds,
    totals: totals.counts(),
    fleets: [...fleets].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, { name, tally }]) => ({ fleet_id: id, fleet_name: name, ...tally.counts() })),
    rollouts,
    webhooks,
    non_compliant: compliance.counts(),
    open_alarms: { ...alarms, total: alarms.critical + alarms.major + alarms.minor + alarms.warning },
  };
};
