import { ApiError, type ErrorDetail } from './errors';

/** The fields the console reads; the API may add more (additive fields are ignored). */
export interface Workspace {
  id: string;
  name: string;
  description: string;
  account_id: string;
  created_at: string;
  /** Days a data point is kept; absent: forever (the default, and a v3 workspace). */
  data_retention_days?: number;
}
export interface Fleet {
  id: string;
  name: string;
  description: string;
  workspace_id: string;
  account_id: string;
  created_at: string;
}
export interface DeviceIdentityRef {
  id: string;
  type: string;
  created_at: string;
}
export interface Device {
  id: string;
  name: string;
  fleet_id: string;
  fleet_name: string;
  workspace_id: string;
  workspace_name: string;
  created_at: string;
  phys_id: string;
  identities: DeviceIdentityRef[] | null;
  connected?: boolean;
  last_connected_at?: string | null;
  last_disconnected_at?: string | null;
  /** Arrival of its newest data point (to within a minute); null: never. */
  last_seen_at?: string | null;
  /** The version its last FOTA ended `done` with; null: not known. */
  firmware_version?: string | null;
  /** Its tags (`{}` when none; absent from an older API). */
  tags?: Record<string, string>;
}
/** A saved query (fleet-state.md §2): its devices are those that match it now. */
export interface Group {
  id: string;
  name: string;
  query: string;
  created_at: string;
  updated_at: string;
  /** Counted now: only in the answer of `GET …/groups/{id}`. */
  device_count?: number;
}
/** Which devices a fleet-wide scheduling targets: those of these fleets (none: every fleet) that match the group or query. */
export interface TargetQuery {
  fleets?: string[];
  group?: string;
  q?: string;
}
const targetParams = (t: TargetQuery = {}) => ({ fleet: t.fleets?.length ? t.fleets : undefined, group: t.group || undefined, q: t.q || undefined });
export interface Identity {
  id: string;
  type: string;
  device_id: string;
  created_at: string;
  revoked_at: string | null;
}
export interface DeviceCredentials {
  devinfo: { device_id: string; mode: string; key_id: string; key_type: string };
  prvkey: string;
  endpoint: { host: string; port: number; mode: string; url: string };
  cacert?: string;
}
/** The states of a job or FOTA on a device (operations.md §1), in the order a device goes through them. */
export const JOB_STATUSES = ['queued', 'pending', 'in_progress', 'done', 'failed', 'timed_out', 'canceled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export interface Job {
  name: string;
  status: JobStatus;
  scheduled_at: string;
  value: Record<string, unknown>;
  /** Done or failed: what the device reported (failed: an object with a top-level `error`). */
  result?: Record<string, unknown>;
  /** Ended: when. */
  completed_at?: string;
  /** Scheduled on fleets: the rollout that records the scheduling. */
  rollout_id?: string;
  timeout_seconds?: number;
  devices?: string[];
}
export interface Fota {
  scheduled_at: string;
  status: JobStatus;
  value: { firmware_id: string; firmware_version: string };
  /** The device's last progress or outcome message. */
  message?: string;
  completed_at?: string;
  rollout_id?: string;
  timeout_seconds?: number;
  devices?: string[];
}
/** A rollout's settings as a scheduling sends them (`rollout` in the body); an omitted one is off. */
export interface RolloutSettingsInput {
  max_per_minute?: number;
  timeout_seconds?: number;
  abort?: { failure_percentage: number; min_finished: number };
  /** Also the devices that match later (fleet-state.md §2); sent only when on. */
  continuous?: true;
}
export type RolloutStatus = 'in_progress' | 'paused' | 'completed' | 'canceled' | 'aborted';
/** The server's record of a fleet-wide scheduling, with live counts that add up to `total`. */
export interface Rollout {
  id: string;
  workspace_id: string;
  /** `state`: a fleet-wide desired state (fleet-state.md §3). */
  kind: 'job' | 'fota' | 'state';
  job_name?: string;
  value?: Record<string, unknown>;
  /** State only: the desired keys it sets on each device (null: removed). */
  desired?: Record<string, unknown>;
  firmware_id?: string;
  firmware_version?: string;
  /** Empty: every fleet of the workspace. */
  fleets: string[];
  created_at: string;
  updated_at: string;
  status: RolloutStatus;
  settings: {
    max_per_minute: number | null;
    timeout_seconds: number | null;
    abort: { failure_percentage: number; min_finished: number } | null;
    /** Reaches devices that match later; absent from an older API. */
    continuous?: boolean;
  };
  /** Targeted a group or a query (absent: fleets only). */
  group_id?: string | null;
  q?: string | null;
  total: number;
  counts: Record<JobStatus, number>;
  /** Rate-limited and releasing: when its next minute's devices are released; null otherwise (absent from an older API). */
  next_release_at?: string | null;
  /** Aborted: its rule and the counts it fired on; null otherwise (absent from an older API). */
  abort_reason?: RolloutAbortReason | null;
}
/** Why a rollout aborted, as the API recorded it when its rule fired. */
export interface RolloutAbortReason {
  rule: { failure_percentage: number; min_finished: number };
  finished: number;
  failed: number;
  timed_out: number;
  /** What the rollout saw, in %, rounded to two decimals. */
  failure_percentage: number;
  message: string;
  at: string;
}
/** One device of a rollout: its state, and what it reported (a job's result, a FOTA's message). */
export interface RolloutDevice {
  device_id: string;
  /** The device's name now (absent when it no longer exists, or from an older API). */
  device_name?: string;
  status: JobStatus;
  updated_at: string;
  result?: Record<string, unknown>;
  message?: string;
}
/** A device's state (fleet-state.md §3): what it should be, what it says it is, and where they differ. */
export interface DeviceState {
  desired: Record<string, unknown>;
  reported: Record<string, unknown>;
  /** Every desired key whose value is not deep-equal to the reported one. */
  delta: Record<string, unknown>;
  /** Grows by one with every change of `desired`; 0 for a device never given one. */
  version: number;
  desired_at: Record<string, string>;
  reported_at: Record<string, string>;
}
/** A fleet-wide desired state's answer: the rollout (kind `state`) that records it, and the devices it targets. */
export interface StateChange {
  rollout_id: string;
  devices: string[];
}
/** One entry of a device's event log (`GET …/devices/{id}/events`). */
export interface DeviceEvent {
  ts: string;
  type: string;
  direction: 'd2c' | 'c2d';
  fleet_id: string;
  device_id: string;
  payload: unknown;
}
/** A condition a device opened, and maybe closed (`GET …/conditions`, spec/fleet-state.md §4). */
export interface Condition {
  uuid: string;
  device_id: string;
  fleet_id: string;
  tag: string;
  status: 'open' | 'closed';
  payload: unknown;
  finish_payload: unknown;
  start: string;
  finish: string | null;
  duration_seconds: number | null;
}
/** The filters of the conditions list. */
export interface ConditionFilter {
  device?: string;
  tag?: string;
  status?: 'open' | 'closed';
  min_duration_seconds?: number;
  start?: string;
  end?: string;
}
export type AlarmKind = 'condition' | 'offline' | 'silent' | 'threshold';
export type AlarmSeverity = 'critical' | 'major' | 'minor' | 'warning';
/** An alarm rule (`…/alarm-rules`, spec/fleet-state.md §4). */
export interface AlarmRule {
  id: string;
  name: string;
  kind: AlarmKind;
  severity: AlarmSeverity;
  target: { fleets: string[]; group: string | null; q: string | null };
  tag: string | null;
  field: string | null;
  op: '>' | '>=' | '<' | '<=' | null;
  value: number | null;
  clear_value: number | null;
  for_seconds: number;
  notify: { emails: string[]; integrations: boolean };
  enabled: boolean;
  created_at: string;
  updated_at: string;
  last_notification_error: { at: string; error: string; email: string | null } | null;
}
/** A rule's fields as the editor sends them (a change: any but `kind`, null clearing one). */
export type AlarmRuleInput = Partial<{
  [K in Exclude<keyof AlarmRule, 'id' | 'created_at' | 'updated_at' | 'last_notification_error' | 'target'>]: AlarmRule[K] | null;
}> & { target?: { fleets?: string[]; group?: string; q?: string } | null };
/** An alarm: one rule's finding on one device. */
export interface Alarm {
  id: string;
  rule_id: string;
  rule_name: string;
  kind: AlarmKind;
  severity: AlarmSeverity;
  device_id: string;
  fleet_id: string;
  status: 'open' | 'acknowledged' | 'closed';
  opened_at: string;
  acknowledged_at: string | null;
  acknowledged_by: string | null;
  note?: string | null;
  closed_at: string | null;
  details: Record<string, unknown>;
}
/** The filters of the alarms list. */
export interface AlarmFilter {
  status?: Alarm['status'];
  severity?: AlarmSeverity;
  rule?: string;
  device?: string;
}
/** Device counts of a workspace or of one of its fleets. */
export interface OverviewCounts {
  devices: number;
  online: number;
  offline: number;
  silent: number;
  never_seen: number;
  firmware: Array<{ version: string; devices: number }>;
}
/** A workspace at a glance (`GET /workspaces/{ws}/overview`). */
export interface Overview {
  workspace_id: string;
  at: string;
  silent_after: number;
  totals: OverviewCounts;
  fleets: Array<OverviewCounts & { fleet_id: string; fleet_name: string }>;
  rollouts: Rollout[];
  webhooks: Array<{
    id: string;
    name: string;
    enabled: boolean;
    consecutive_failures: number;
    last_error: string | null;
    last_error_at: string | null;
    last_delivery_at: string | null;
  }>;
  /** Devices whose reported state differs from the desired one, and the keys not yet applied (most devices first). */
  non_compliant: { devices: number; keys: Array<{ key: string; devices: number }> };
  /** Alarms not closed by severity (null from an API before alarms). */
  open_alarms?: (Record<AlarmSeverity, number> & { total: number }) | null;
}
/** A presigned request the browser sends itself, straight to S3. */
export interface FirmwareUpload {
  method: 'PUT';
  url: string;
  headers: Record<string, string>;
  expires_at: string;
}
export interface Firmware {
  workspace_id: string;
  firmware_id: string;
  version: string;
  size: number;
  sha256: string;
  description: string;
  status: 'awaiting_upload' | 'ready';
  created_at: string;
  updated_at: string;
  /** Only in the answer to a registration. */
  upload?: FirmwareUpload;
}
/** Which page of a list to read: at most `limit` items, from the `cursor` the previous page answered as `next`. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}
export interface ApiKey {
  id: string;
  name: string;
  workspace_id: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}
export interface IntegrationStatus {
  last_delivery_at: string | null;
  last_error_at: string | null;
  last_error: string | null;
  consecutive_failures: number;
  /** When the current run of failures began; null while deliveries succeed. */
  failing_since?: string | null;
}
/** One webhook POST of a delivery log (GET …/integrations/{id}/deliveries). */
export interface Delivery {
  at: string;
  ok: boolean;
  status: number | null;
  error: string | null;
  duration_ms: number;
  entries: number;
  kind: 'data' | 'events';
  batch_id: string;
  test: boolean;
}
/** What a DLQ replay did (POST …/integrations/{id}/replay). */
export interface Replay {
  moved: number;
  examined: number;
  complete: boolean;
}
/** A fleet-wide scheduling's dry run (`dry_run=true`): the devices it would target now. */
export interface DryRun {
  dry_run: true;
  targets: number;
  fleet_ids: string[] | null;
}
export interface Integration {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  data: boolean;
  events: boolean;
  tags: string[];
  enabled: boolean;
  created_at: string;
  updated_at: string;
  previous_secret_expires_at: string | null;
  status: IntegrationStatus;
}
/** How a test delivery went (POST …/integrations/{id}/test). */
export interface TestDelivery {
  ok: boolean;
  status: number | null;
  error: string | null;
  duration_ms: number;
  batch_id: string;
  kind: 'data' | 'events';
}
/** A workspace's limits (GET /workspaces/{id}/limits). */
export interface Limits {
  devices: number;
  fleets: number;
  api_keys: number;
  integrations: number;
  points_per_device_per_day: number;
  requests_per_second_per_key: number;
  workspaces_per_account: number;
}
/** What a workspace did on a UTC day (GET /workspaces/{id}/usage). */
export interface UsageCounts {
  points_in: number;
  points_stored: number;
  points_refused: number;
  api_requests: number;
  webhook_deliveries: number;
  webhook_failures: number;
}
export interface UsageDay extends UsageCounts {
  /** YYYY-MM-DD, UTC. */
  date: string;
}
export interface Usage {
  days: UsageDay[];
  totals: UsageCounts;
}
export interface TimeseriesRecord {
  timestamp_device: string;
  timestamp_in: string;
  fleet_id: string;
  device_id: string;
  tag: string;
  payload: unknown;
}
export interface TimeseriesQuery {
  start?: string;
  end?: string;
  from?: number;
  size?: number;
  sort?: 'timestamp_device' | '-timestamp_device';
  device?: string[];
  tag?: string[];
}

export type AggregateFunction = 'avg' | 'min' | 'max' | 'sum' | 'count';
export interface AggregateQuery {
  start?: string;
  end?: string;
  device?: string[];
  tag?: string[];
  field?: string;
  every?: string;
  tz?: string;
  fn?: string;
  group_by?: 'device';
  limit?: number;
}
export interface AggregateBucket {
  start: string;
  device_id?: string;
  avg?: number | null;
  min?: number;
  max?: number;
  sum?: number | null;
  count?: number;
}
/** What an export holds: the storage query's filters. */
export interface ExportFilters {
  start?: string;
  end?: string;
  device?: string[];
  tag?: string[];
  fleet?: string[];
}
/** A data export: a file in S3 made in the background (spec/operations.md §4). */
export interface DataExport {
  id: string;
  status: 'running' | 'ready' | 'failed';
  format: 'csv' | 'ndjson';
  filters: ExportFilters;
  /** Asked with names: the file has device_name and fleet_name. */
  names?: true;
  rows: number;
  bytes: number;
  created_at: string;
  completed_at: string | null;
  expires_at: string | null;
  url: string | null;
  url_expires_at: string | null;
  error: { code: string; message: string } | null;
}
export interface AggregatePage {
  buckets: AggregateBucket[];
  skipped: number;
  next: string | null;
}

/** Query values: a list repeats the parameter (`?fleet=a&fleet=b`), undefined leaves it out. */
export type Query = Record<string, string | number | readonly string[] | undefined>;

/** Builds `?a=1&b=x&b=y` from a query object, in a stable order. */
export const queryString = (query: Query = {}): string => {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, String(one));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
};

/** What the client needs around `fetch`: where the API is, and the headers that authenticate. */
export interface ApiClientOptions {
  /** `{base_url}`, ending in `/v3`. */
  baseUrl: string;
  /** The authentication headers of the next request (a fresh session token, or an API key). */
  headers: () => Promise<Record<string, string>>;
  fetch?: typeof fetch;
  /** Called on a 401: the session is no longer accepted (the console then signs the user out). */
  onUnauthorized?: () => void;
}

const enc = encodeURIComponent;

/** Reads a JSON body chunk by chunk, telling how many bytes came so far. */
export const readJson = async (response: Response, onProgress?: (bytes: number) => void): Promise<unknown> => {
  if (!onProgress || !response.body) return response.json();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
    onProgress(bytes);
  }
  const all = new Uint8Array(bytes);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return JSON.parse(new TextDecoder().decode(all));
};

/** Reads an error answer: the envelope when there is one, the HTTP status text otherwise. */
const errorOf = async (response: Response): Promise<ApiError> => {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; details?: ErrorDetail[] }; request_id?: string; message?: string };
    if (body.error?.message) return new ApiError(response.status, body.error.code ?? 'error', body.error.message, body.error.details ?? [], body.request_id);
    if (body.message) return new ApiError(response.status, 'error', body.message);
  } catch {
    // not JSON: a proxy's page, or a cut connection
  }
  return new ApiError(response.status, 'error', `The service answered ${response.status} ${response.statusText}`.trim());
};

/**
 * A client of the v3 management and storage API: one method per operation of the route table,
 * each answering the body's payload or throwing an {@link ApiError} built from the envelope.
 */
export const createApiClient = ({ baseUrl, headers, fetch: fetchImpl = globalThis.fetch.bind(globalThis), onUnauthorized }: ApiClientOptions) => {
  const base = baseUrl.replace(/\/+$/, '');
  const failed = async (response: Response) => {
    const error = await errorOf(response);
    if (error.status === 401) onUnauthorized?.();
    return error;
  };
  // `signal` aborts the request and the reading of its answer (the connection is then free at once).
  const request = async <T>(method: string, path: string, options: { query?: Query; body?: unknown; signal?: AbortSignal } = {}): Promise<T> => {
    const response = await fetchImpl(`${base}${path}${queryString(options.query)}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...(await headers()) },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!response.ok) throw await failed(response);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const ws = (workspaceId: string) => `/workspaces/${enc(workspaceId)}`;
  return {
    request,
    listWorkspaces: () => request<{ workspaces: Workspace[] }>('GET', '/workspaces').then((b) => b.workspaces),
    createWorkspace: (name: string, description = '') =>
      request<{ workspace: Workspace }>('POST', '/workspaces', { body: { name, description } }).then((b) => b.workspace),
    getWorkspace: (workspaceId: string) => request<{ workspace: Workspace }>('GET', ws(workspaceId)).then((b) => b.workspace),
    updateWorkspace: (workspaceId: string, body: { name?: string; description?: string; data_retention_days?: number | null }) =>
      request<{ workspace: Workspace }>('PATCH', ws(workspaceId), { body }).then((b) => b.workspace),
    listFleets: (workspaceId: string) => request<{ fleets: Fleet[] }>('GET', `${ws(workspaceId)}/fleets`).then((b) => b.fleets),
    createFleet: (workspaceId: string, name: string, description = '') =>
      request<{ fleet: Fleet }>('POST', `${ws(workspaceId)}/fleets`, { body: { name, description } }).then((b) => b.fleet),
    /** The workspace's devices (of `fleets`; matching the query `q`, fleet-state.md §1, whose 400 names where it is wrong). */
    listDevices: (workspaceId: string, fleets?: string[], q?: string) =>
      request<{ devices: Device[] }>('GET', `${ws(workspaceId)}/devices`, { query: { fleet: fleets, q: q || undefined } }).then((b) => b.devices),
    getDevice: (workspaceId: string, deviceId: string) =>
      request<{ device: Device }>('GET', `${ws(workspaceId)}/devices/${enc(deviceId)}`).then((b) => b.device),
    createDevice: (workspaceId: string, body: { name: string; fleet_id?: string; phys_id?: string }) =>
      request<{ device: Device }>('POST', `${ws(workspaceId)}/devices`, { body }).then((b) => b.device),
    updateDevice: (workspaceId: string, deviceId: string, body: { name: string; fleet_id: string }) =>
      request<{ device: Device }>('PUT', `${ws(workspaceId)}/devices/${enc(deviceId)}`, { body }).then((b) => b.device),
    /** Changes a device: tags merged (`null` removes one), name and fleet when given. */
    patchDevice: (workspaceId: string, deviceId: string, body: { name?: string; fleet_id?: string; tags?: Record<string, string | null> }) =>
      request<{ device: Device }>('PATCH', `${ws(workspaceId)}/devices/${enc(deviceId)}`, { body }).then((b) => b.device),
    /** Deletes a device (its identities revoked, open jobs and FOTA canceled); `purge`: its data points too. */
    deleteDevice: (workspaceId: string, deviceId: string, { purge = false }: { purge?: boolean } = {}) =>
      request<{ device: Device }>('DELETE', `${ws(workspaceId)}/devices/${enc(deviceId)}`, { query: { purge: purge ? 'data' : undefined } }).then(
        (b) => b.device,
      ),
    /** Deletes an empty fleet (409 while it holds devices, and for the default fleet). */
    deleteFleet: (workspaceId: string, fleetId: string) => request<unknown>('DELETE', `${ws(workspaceId)}/fleets/${enc(fleetId)}`),
    /** Deletes an empty workspace and everything in it (409 while it holds devices). */
    deleteWorkspace: (workspaceId: string) => request<unknown>('DELETE', ws(workspaceId)),
    /** A page of the workspace's groups. */
    listGroups: (workspaceId: string, page: PageQuery = {}) =>
      request<{ groups: Group[]; next?: string | null }>('GET', `${ws(workspaceId)}/groups`, { query: { ...page } }).then((b) => ({
        items: b.groups,
        next: b.next ?? null,
      })),
    /** A group with its `device_count`, counted now. */
    getGroup: (workspaceId: string, groupId: string) => request<{ group: Group }>('GET', `${ws(workspaceId)}/groups/${enc(groupId)}`).then((b) => b.group),
    createGroup: (workspaceId: string, body: { name: string; query: string }) =>
      request<{ group: Group }>('POST', `${ws(workspaceId)}/groups`, { body }).then((b) => b.group),
    updateGroup: (workspaceId: string, groupId: string, body: { name?: string; query?: string }) =>
      request<{ group: Group }>('PATCH', `${ws(workspaceId)}/groups/${enc(groupId)}`, { body }).then((b) => b.group),
    /** Deletes a group (409 while a continuous rollout or an alarm rule targets it). */
    deleteGroup: (workspaceId: string, groupId: string) => request<unknown>('DELETE', `${ws(workspaceId)}/groups/${enc(groupId)}`),
    /** The devices that match a group now (every page, as the device list). */
    listGroupDevices: (workspaceId: string, groupId: string) =>
      request<{ devices: Device[] }>('GET', `${ws(workspaceId)}/groups/${enc(groupId)}/devices`).then((b) => b.devices),
    /** A device's desired and reported state, their delta and version. */
    getDeviceState: (workspaceId: string, deviceId: string) =>
      request<{ state: DeviceState }>('GET', `${ws(workspaceId)}/devices/${enc(deviceId)}/state`).then((b) => b.state),
    /** Merges desired keys (`null` removes one); with `version`, a 409 when it is not the current one (nothing written). */
    patchDeviceState: (workspaceId: string, deviceId: string, desired: Record<string, unknown>, version?: number) =>
      request<{ state: DeviceState }>('PATCH', `${ws(workspaceId)}/devices/${enc(deviceId)}/state`, { body: { desired, version } }).then((b) => b.state),
    /** Sets desired keys on the devices of a target as a rollout of kind `state`; `rollout` only when given. */
    changeFleetState: (workspaceId: string, desired: Record<string, unknown>, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<{ state_change: StateChange }>('PATCH', `${ws(workspaceId)}/state`, { query: targetParams(target), body: { desired, rollout } }).then(
        (b) => b.state_change,
      ),
    /** How many devices a fleet-wide desired state on this target would reach now; nothing is written. */
    dryRunFleetState: (workspaceId: string, desired: Record<string, unknown>, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<DryRun>('PATCH', `${ws(workspaceId)}/state`, { query: { ...targetParams(target), dry_run: 'true' }, body: { desired, rollout } }),
    /** A page of the device's event log, newest first; `next` is the `before` of the next page. */
    listDeviceEvents: (workspaceId: string, deviceId: string, page: { limit?: number; before?: string } = {}) =>
      request<{ events: DeviceEvent[]; next: string | null }>('GET', `${ws(workspaceId)}/devices/${enc(deviceId)}/events`, { query: { ...page } }),
    /** A page of the workspace's conditions, newest first, filtered. */
    listConditions: (workspaceId: string, filter: ConditionFilter = {}, page: PageQuery = {}) =>
      request<{ conditions: Condition[]; next?: string | null }>('GET', `${ws(workspaceId)}/conditions`, { query: { ...filter, ...page } }).then((b) => ({
        items: b.conditions,
        next: b.next ?? null,
      })),
    /** A page of the workspace's alarms, newest first, filtered. */
    listAlarms: (workspaceId: string, filter: AlarmFilter = {}, page: PageQuery = {}) =>
      request<{ alarms: Alarm[]; next?: string | null }>('GET', `${ws(workspaceId)}/alarms`, { query: { ...filter, ...page } }).then((b) => ({
        items: b.alarms,
        next: b.next ?? null,
      })),
    /** Acknowledges an open alarm (one acknowledged already answers as it is; 409 once closed). */
    acknowledgeAlarm: (workspaceId: string, alarmId: string, note?: string) =>
      request<{ alarm: Alarm }>('POST', `${ws(workspaceId)}/alarms/${enc(alarmId)}/acknowledge`, { body: note ? { note } : {} }).then((b) => b.alarm),
    /** The workspace's alarm rules, oldest first (every page). */
    listAlarmRules: (workspaceId: string) => request<{ alarm_rules: AlarmRule[] }>('GET', `${ws(workspaceId)}/alarm-rules`).then((b) => b.alarm_rules),
    createAlarmRule: (workspaceId: string, body: AlarmRuleInput) =>
      request<{ alarm_rule: AlarmRule }>('POST', `${ws(workspaceId)}/alarm-rules`, { body }).then((b) => b.alarm_rule),
    updateAlarmRule: (workspaceId: string, ruleId: string, body: AlarmRuleInput) =>
      request<{ alarm_rule: AlarmRule }>('PATCH', `${ws(workspaceId)}/alarm-rules/${enc(ruleId)}`, { body }).then((b) => b.alarm_rule),
    /** Deletes a rule: its alarms that are not closed close. */
    deleteAlarmRule: (workspaceId: string, ruleId: string) => request<unknown>('DELETE', `${ws(workspaceId)}/alarm-rules/${enc(ruleId)}`),
    /** The workspace at a glance; `silentAfter`: seconds without data after which a device is silent. */
    getOverview: (workspaceId: string, silentAfter?: number) =>
      request<{ overview: Overview }>('GET', `${ws(workspaceId)}/overview`, { query: { silent_after: silentAfter } }).then((b) => b.overview),
    listIdentities: (workspaceId: string, deviceId: string) =>
      request<{ identities: Identity[] }>('GET', `${ws(workspaceId)}/devices/${enc(deviceId)}/identities`).then((b) => b.identities),
    createIdentity: (workspaceId: string, deviceId: string) =>
      request<{ identity: Identity; credentials: DeviceCredentials }>('POST', `${ws(workspaceId)}/devices/${enc(deviceId)}/identities`, {
        body: { type: 'sym' },
      }),
    revokeIdentity: (workspaceId: string, deviceId: string, identityId: string) =>
      request<{ identity: Identity }>('DELETE', `${ws(workspaceId)}/devices/${enc(deviceId)}/identities/${enc(identityId)}`).then((b) => b.identity),
    listJobs: (deviceId: string, status?: JobStatus) =>
      request<{ jobs: Job[] }>('GET', `/devices/${enc(deviceId)}/jobs`, { query: { status } }).then((b) => b.jobs),
    getJob: (deviceId: string, jobName: string) => request<{ job: Job }>('GET', `/devices/${enc(deviceId)}/jobs/${enc(jobName)}`).then((b) => b.job),
    /** Schedules (or replaces) a job on one device; `timeout_seconds` only when given. */
    scheduleJob: (deviceId: string, jobName: string, value: Record<string, unknown>, timeoutSeconds?: number) =>
      request<{ job: Job }>('POST', `/devices/${enc(deviceId)}/jobs/${enc(jobName)}`, { body: { value, timeout_seconds: timeoutSeconds } }).then((b) => b.job),
    /** Cancels a device's job that has not ended (409 once it has). */
    cancelJob: (deviceId: string, jobName: string) => request<{ job: Job }>('DELETE', `/devices/${enc(deviceId)}/jobs/${enc(jobName)}`).then((b) => b.job),
    /** Schedules a job on the devices of a target (no fleet: every fleet); the answer names its rollout. `rollout` only when given. */
    scheduleFleetJob: (workspaceId: string, jobName: string, value: Record<string, unknown>, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<{ job: Job }>('POST', `${ws(workspaceId)}/jobs/${enc(jobName)}`, { query: targetParams(target), body: { value, rollout } }).then((b) => b.job),
    /** How many devices a job on this target would reach now; nothing is scheduled. */
    dryRunFleetJob: (workspaceId: string, jobName: string, value: Record<string, unknown>, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<DryRun>('POST', `${ws(workspaceId)}/jobs/${enc(jobName)}`, { query: { ...targetParams(target), dry_run: 'true' }, body: { value, rollout } }),
    getFota: (deviceId: string) => request<{ fota: Fota }>('GET', `/devices/${enc(deviceId)}/fota`).then((b) => b.fota),
    /** Schedules a FOTA on one device: no body (as v3) unless a timeout is given. */
    scheduleFota: (deviceId: string, firmwareId: string, version: string, timeoutSeconds?: number) =>
      request<{ fota: Fota }>('POST', `/devices/${enc(deviceId)}/fota/${enc(firmwareId)}/versions/${enc(version)}`, {
        body: timeoutSeconds === undefined ? undefined : { timeout_seconds: timeoutSeconds },
      }).then((b) => b.fota),
    /** Cancels a device's FOTA that has not ended (409 once it has). */
    cancelFota: (deviceId: string) => request<{ fota: Fota }>('DELETE', `/devices/${enc(deviceId)}/fota`).then((b) => b.fota),
    /** Schedules a FOTA on the devices of a target: no body (as v3) unless rollout settings are given. */
    scheduleFleetFota: (workspaceId: string, firmwareId: string, version: string, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<{ fota: Fota }>('POST', `${ws(workspaceId)}/fota/${enc(firmwareId)}/versions/${enc(version)}`, {
        query: targetParams(target),
        body: rollout === undefined ? undefined : { rollout },
      }).then((b) => b.fota),
    /** How many devices a FOTA on this target would reach now; nothing is scheduled. */
    dryRunFleetFota: (workspaceId: string, firmwareId: string, version: string, target?: TargetQuery, rollout?: RolloutSettingsInput) =>
      request<DryRun>('POST', `${ws(workspaceId)}/fota/${enc(firmwareId)}/versions/${enc(version)}`, {
        query: { ...targetParams(target), dry_run: 'true' },
        body: rollout === undefined ? undefined : { rollout },
      }),
    /** A page of the workspace's rollouts, newest first. */
    listRollouts: (workspaceId: string, page: PageQuery = {}) =>
      request<{ rollouts: Rollout[]; next?: string | null }>('GET', `${ws(workspaceId)}/rollouts`, { query: { ...page } }).then((b) => ({
        items: b.rollouts,
        next: b.next ?? null,
      })),
    getRollout: (workspaceId: string, rolloutId: string, signal?: AbortSignal) =>
      request<{ rollout: Rollout }>('GET', `${ws(workspaceId)}/rollouts/${enc(rolloutId)}`, { signal }).then((b) => b.rollout),
    /** A page of a rollout's devices, all or in some states. */
    listRolloutDevices: (workspaceId: string, rolloutId: string, query: PageQuery & { status?: readonly JobStatus[] } = {}, signal?: AbortSignal) =>
      request<{ devices: RolloutDevice[]; next?: string | null }>('GET', `${ws(workspaceId)}/rollouts/${enc(rolloutId)}/devices`, {
        query: { ...query },
        signal,
      }).then((b) => ({
        items: b.devices,
        next: b.next ?? null,
      })),
    /** Pauses, resumes or cancels a rollout (409 once it has ended). */
    changeRollout: (workspaceId: string, rolloutId: string, action: 'pause' | 'resume' | 'cancel') =>
      request<{ rollout: Rollout }>('POST', `${ws(workspaceId)}/rollouts/${enc(rolloutId)}/${action}`).then((b) => b.rollout),
    /** Firmware versions by firmware ID, then version: every one, or a page. */
    listFirmwares: (workspaceId: string, page: PageQuery = {}) =>
      request<{ firmwares: Firmware[]; next?: string | null }>('GET', `${ws(workspaceId)}/firmwares`, { query: { ...page } }).then((b) => ({
        items: b.firmwares,
        next: b.next ?? null,
      })),
    getFirmware: (workspaceId: string, firmwareId: string, version: string) =>
      request<{ firmware: Firmware }>('GET', `${ws(workspaceId)}/firmwares/${enc(firmwareId)}/versions/${enc(version)}`).then((b) => b.firmware),
    /** Registers a version by its size and SHA-256: the answer carries the presigned PUT for its image. */
    registerFirmware: (workspaceId: string, firmwareId: string, version: string, body: { size: number; sha256: string; description?: string }) =>
      request<{ firmware: Firmware }>('POST', `${ws(workspaceId)}/firmwares/${enc(firmwareId)}/versions/${enc(version)}`, { body }).then((b) => b.firmware),
    deleteFirmware: (workspaceId: string, firmwareId: string, version: string) =>
      request<{ firmware: Firmware }>('DELETE', `${ws(workspaceId)}/firmwares/${enc(firmwareId)}/versions/${enc(version)}`).then((b) => b.firmware),
    listApiKeys: (workspaceId: string) => request<{ api_keys: ApiKey[] }>('GET', `${ws(workspaceId)}/api-keys`).then((b) => b.api_keys),
    createApiKey: (workspaceId: string, name: string, expiresAt?: string) =>
      request<{ api_key: ApiKey; key: string }>('POST', `${ws(workspaceId)}/api-keys`, { body: { name, expires_at: expiresAt } }),
    revokeApiKey: (workspaceId: string, keyId: string) =>
      request<{ api_key: ApiKey }>('DELETE', `${ws(workspaceId)}/api-keys/${enc(keyId)}`).then((b) => b.api_key),
    listIntegrations: (workspaceId: string) => request<{ integrations: Integration[] }>('GET', `${ws(workspaceId)}/integrations`).then((b) => b.integrations),
    getIntegration: (workspaceId: string, id: string) =>
      request<{ integration: Integration }>('GET', `${ws(workspaceId)}/integrations/${enc(id)}`).then((b) => b.integration),
    createIntegration: (workspaceId: string, body: { name: string; url: string; data: boolean; events: boolean; tags: string[]; enabled?: boolean }) =>
      request<{ integration: Integration; secret: string }>('POST', `${ws(workspaceId)}/integrations`, { body }),
    updateIntegration: (workspaceId: string, id: string, body: Partial<Pick<Integration, 'name' | 'url' | 'data' | 'events' | 'tags' | 'enabled'>>) =>
      request<{ integration: Integration }>('PATCH', `${ws(workspaceId)}/integrations/${enc(id)}`, { body }).then((b) => b.integration),
    deleteIntegration: (workspaceId: string, id: string) => request<unknown>('DELETE', `${ws(workspaceId)}/integrations/${enc(id)}`),
    rotateIntegrationSecret: (workspaceId: string, id: string) =>
      request<{ integration: Integration; secret: string }>('POST', `${ws(workspaceId)}/integrations/${enc(id)}/secret`),
    testIntegration: (workspaceId: string, id: string) =>
      request<{ delivery: TestDelivery; integration: Integration }>('POST', `${ws(workspaceId)}/integrations/${enc(id)}/test`),
    /** A webhook's last deliveries, newest first. */
    listIntegrationDeliveries: (workspaceId: string, id: string, limit = 20) =>
      request<{ deliveries: Delivery[] }>('GET', `${ws(workspaceId)}/integrations/${enc(id)}/deliveries`, { query: { limit } }).then((b) => b.deliveries),
    /** Moves the dead-lettered messages the webhook missed back to the forward queue. */
    replayIntegration: (workspaceId: string, id: string) =>
      request<{ replay: Replay; integration: Integration }>('POST', `${ws(workspaceId)}/integrations/${enc(id)}/replay`),
    getLimits: (workspaceId: string) => request<{ limits: Limits }>('GET', `${ws(workspaceId)}/limits`).then((b) => b.limits),
    /** The limits and, beside each quota, what it holds now (`used`; null: not counted yet). */
    getLimitsAndUse: (workspaceId: string) =>
      request<{ limits: Limits; used: Partial<Record<keyof Limits, number | null>> }>('GET', `${ws(workspaceId)}/limits`),
    /** The workspace's usage per UTC day, `start` to `end` (YYYY-MM-DD, both included; the last 30 days without them). */
    getUsage: (workspaceId: string, range: { start?: string; end?: string } = {}) =>
      request<{ usage: Usage }>('GET', `${ws(workspaceId)}/usage`, { query: range }).then((b) => b.usage),
    /** A page of data points; `onProgress` hears the bytes received so far (a page of 175,000 points is tens of MB). */
    queryTimeseries: async (workspaceId: string, query: TimeseriesQuery, onProgress?: (bytes: number) => void): Promise<TimeseriesRecord[]> => {
      const response = await fetchImpl(`${base}/timeseries/${enc(workspaceId)}/data${queryString({ ...query })}`, {
        headers: { 'Content-Type': 'application/json', ...(await headers()) },
      });
      if (!response.ok) throw await failed(response);
      return ((await readJson(response, onProgress)) as { result: TimeseriesRecord[] }).result;
    },
    /**
     * Starts an export of the points these filters select, to a file of `format`; it runs in the
     * background. `names`: the file also carries device_name and fleet_name (sent only when asked).
     */
    createExport: (workspaceId: string, format: DataExport['format'], filters: ExportFilters, { names = false }: { names?: boolean } = {}) =>
      request<{ export: DataExport }>('POST', `/timeseries/${enc(workspaceId)}/exports`, {
        body: { format, ...filters, ...(names ? { names: true } : {}) },
      }).then((b) => b.export),
    /** An export's progress, and once ready a fresh download URL. */
    getExport: (workspaceId: string, exportId: string) =>
      request<{ export: DataExport }>('GET', `/timeseries/${enc(workspaceId)}/exports/${enc(exportId)}`).then((b) => b.export),
    /** One page of an aggregation (at most `limit` buckets, 10,000 by default). */
    aggregateTimeseries: (workspaceId: string, query: AggregateQuery) =>
      request<AggregatePage>('GET', `/timeseries/${enc(workspaceId)}/aggregate`, { query: { ...query } }),
  };
};

/** The console's API client. */
export type ApiClient = ReturnType<typeof createApiClient>;
