/**
 * THE route table: every HTTP route of the v3 interface, once. Pure data: the CDK stack builds
 * API Gateway resources from it, each handler builds its router from its own rows, the local
 * runtime serves it, and the OpenAPI document is checked against it.
 */

/** The Lambda (a folder under `lambdas/`) that serves a route. */
export type RouteHandler =
  | 'workspaces'
  | 'fleets'
  | 'devices'
  | 'identities'
  | 'jobs'
  | 'fota'
  | 'firmwares'
  | 'api-keys'
  | 'integrations'
  | 'timeseries'
  | 'limits'
  | 'device-api'
  | 'rollouts'
  | 'groups'
  | 'state'
  | 'alarms'
  | 'openapi';

/**
 * How a route authenticates: an account's API key (the API-key authorizer), a device's signed
 * JWT (the device authorizer), or nothing (the OpenAPI document).
 */
export type RouteAuth = 'api-key' | 'device' | 'none';

/**
 * The authorizer context key that carries why a signed credential is refused: an authorizer
 * answers Deny with it, and the gateway (API Gateway's ACCESS_DENIED response, the local gateway)
 * writes it into the 401's `details`.
 */
export const REFUSAL_CONTEXT_KEY = 'refusal';

/** The `details` field that names the device token in such a 401. */
export const DEVICE_TOKEN_FIELD = 'header.authorization';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Route {
  readonly method: HttpMethod;
  /** Path below the stage (`/v3`), with lowerCamelCase parameters. */
  readonly path: string;
  readonly handler: RouteHandler;
  /** Unique name of the operation; the handler's function and the OpenAPI operationId. */
  readonly operationId: string;
  readonly auth: RouteAuth;
  readonly summary: string;
  /** The handler streams its answer (API Gateway ResponseTransferMode.STREAM, awslambda.streamifyResponse). */
  readonly stream?: boolean;
}

/**
 * A route handler's Lambda timeout (seconds): a buffered answer within API Gateway's 29 s
 * integration timeout; a streamed one (a list of 100,000 devices, a fleet-wide scheduling that names
 * every device) up to 5 minutes. The stack sets them; `npm start` counts the same down.
 */
export const ROUTE_HANDLER_TIMEOUT_SECONDS = { buffered: 29, streamed: 300 } as const;

/**
 * The handlers whose answers stream (awslambda.streamifyResponse; API Gateway
 * ResponseTransferMode.STREAM): the storage query, and every handler that serves a list (and the jobs and FOTA ones, whose fleet-wide answers name every device), since a
 * list of 100,000 devices is far past a buffered answer's 6 MB. A streaming Lambda answers every
 * invocation in the streaming format, which a BUFFERED integration cannot read, so every route of
 * such a handler streams (its small answers too: one prelude, then the JSON).
 */
export const STREAMED_HANDLERS: ReadonlySet<RouteHandler> = new Set<RouteHandler>([
  'workspaces',
  'fleets',
  'devices',
  'identities',
  'jobs',
  'fota',
  'firmwares',
  'api-keys',
  'integrations',
  'timeseries',
  'rollouts',
  'groups',
  'alarms',
]);

const route = (method: HttpMethod, path: string, handler: RouteHandler, operationId: string, summary: string, auth: RouteAuth = 'api-key'): Route => ({
  method,
  path,
  handler,
  operationId,
  auth,
  summary,
  ...(STREAMED_HANDLERS.has(handler) ? { stream: true } : {}),
});

export const ROUTES: readonly Route[] = [
  route('GET', '/workspaces', 'workspaces', 'listWorkspaces', 'List the account’s workspaces, the key’s bound workspace first'),
  route('POST', '/workspaces', 'workspaces', 'createWorkspace', 'Create a workspace and its default fleet'),
  route('GET', '/workspaces/{workspaceId}', 'workspaces', 'getWorkspace', 'Get a workspace'),
  // An addition to the v3 interface (spec/operations.md §4): rename, describe, and set how long its data points are kept.
  route('PATCH', '/workspaces/{workspaceId}', 'workspaces', 'updateWorkspace', 'Change a workspace’s name, description or data retention'),
  // Additions to the v3 interface (spec/fleet-state.md §5): deleting devices, empty fleets and empty workspaces.
  route('DELETE', '/workspaces/{workspaceId}', 'workspaces', 'deleteWorkspace', 'Delete a workspace that holds no device, and everything in it'),

  route('GET', '/workspaces/{workspaceId}/fleets', 'fleets', 'listFleets', 'List the fleets of a workspace'),
  route('POST', '/workspaces/{workspaceId}/fleets', 'fleets', 'createFleet', 'Create a fleet'),
  route('GET', '/workspaces/{workspaceId}/fleets/{fleetId}', 'fleets', 'getFleet', 'Get a fleet'),
  route('DELETE', '/workspaces/{workspaceId}/fleets/{fleetId}', 'fleets', 'deleteFleet', 'Delete a fleet that holds no device (not the default fleet)'),

  // Additions to the v3 interface (spec/fleet-state.md §2): groups, saved queries of the device search.
  route('GET', '/workspaces/{workspaceId}/groups', 'groups', 'listGroups', 'List the groups (saved device queries) of a workspace'),
  route('POST', '/workspaces/{workspaceId}/groups', 'groups', 'createGroup', 'Save a device query as a group'),
  route('GET', '/workspaces/{workspaceId}/groups/{groupId}', 'groups', 'getGroup', 'Get a group, with the number of devices it matches now'),
  route('PATCH', '/workspaces/{workspaceId}/groups/{groupId}', 'groups', 'updateGroup', 'Rename a group or change its query'),
  route('DELETE', '/workspaces/{workspaceId}/groups/{groupId}', 'groups', 'deleteGroup', 'Delete a group that nothing targets'),
  route('GET', '/workspaces/{workspaceId}/groups/{groupId}/devices', 'groups', 'listGroupDevices', 'List the devices a group matches now, a page at a time'),

  // Additions to the v3 interface (spec/fleet-state.md §3): a device's desired and reported state.
  route(
    'GET',
    '/workspaces/{workspaceId}/devices/{deviceId}/state',
    'state',
    'getDeviceState',
    'Get a device’s desired and reported state, their delta and version',
  ),
  route(
    'PATCH',
    '/workspaces/{workspaceId}/devices/{deviceId}/state',
    'state',
    'patchDeviceState',
    'Change a device’s desired state (merged; null removes a key; 409 on a stale version)',
  ),

  // Additions to the v3 interface (spec/fleet-state.md §4): alarm rules and their alarms, one handler.
  route('GET', '/workspaces/{workspaceId}/alarm-rules', 'alarms', 'listAlarmRules', 'List the alarm rules of a workspace'),
  route('POST', '/workspaces/{workspaceId}/alarm-rules', 'alarms', 'createAlarmRule', 'Create an alarm rule'),
  route('GET', '/workspaces/{workspaceId}/alarm-rules/{alarmRuleId}', 'alarms', 'getAlarmRule', 'Get an alarm rule'),
  route(
    'PATCH',
    '/workspaces/{workspaceId}/alarm-rules/{alarmRuleId}',
    'alarms',
    'updateAlarmRule',
    'Change, enable or disable an alarm rule (disabling closes its alarms)',
  ),
  route('DELETE', '/workspaces/{workspaceId}/alarm-rules/{alarmRuleId}', 'alarms', 'deleteAlarmRule', 'Delete an alarm rule, closing its alarms'),
  route('GET', '/workspaces/{workspaceId}/alarms', 'alarms', 'listAlarms', 'List the alarms of a workspace, newest first, filtered'),
  route('POST', '/workspaces/{workspaceId}/alarms/{alarmId}/acknowledge', 'alarms', 'acknowledgeAlarm', 'Acknowledge an open alarm, with a note'),

  route('GET', '/workspaces/{workspaceId}/devices', 'devices', 'listDevices', 'List the devices of a workspace'),
  route('POST', '/workspaces/{workspaceId}/devices', 'devices', 'createDevice', 'Create a device (default fleet when fleet_id is omitted)'),
  route('GET', '/workspaces/{workspaceId}/devices/{deviceId}', 'devices', 'getDevice', 'Get a device'),
  route('PUT', '/workspaces/{workspaceId}/devices/{deviceId}', 'devices', 'updateDevice', 'Change a device’s name and fleet'),
  // An addition to v3 (spec/fleet-state.md §1): change some of a device's fields, its tags merged.
  route('PATCH', '/workspaces/{workspaceId}/devices/{deviceId}', 'devices', 'patchDevice', 'Change a device’s name, fleet or tags (merged; null removes one)'),
  route(
    'DELETE',
    '/workspaces/{workspaceId}/devices/{deviceId}',
    'devices',
    'deleteDevice',
    'Delete a device: its credentials revoked and its MQTT session closed at once, its open jobs and FOTA canceled',
  ),
  // Additions to the v3 interface (issue 33, docs/api.md): a device's event log and the workspace at a glance.
  route(
    'GET',
    '/workspaces/{workspaceId}/devices/{deviceId}/events',
    'devices',
    'listDeviceEvents',
    'A device’s events of the last 30 days, newest first, a page at a time',
  ),
  // fleet-state.md §4: the conditions devices open and close, readable with ZDM's filters.
  route('GET', '/workspaces/{workspaceId}/conditions', 'devices', 'listConditions', 'List a workspace’s conditions, open and closed, newest first'),
  route(
    'GET',
    '/workspaces/{workspaceId}/overview',
    'devices',
    'getOverview',
    'The workspace at a glance: devices online, offline, silent, firmware, rollouts, failing webhooks',
  ),

  route('GET', '/workspaces/{workspaceId}/devices/{deviceId}/identities', 'identities', 'listIdentities', 'List a device’s identities (never their keys)'),
  route(
    'POST',
    '/workspaces/{workspaceId}/devices/{deviceId}/identities',
    'identities',
    'createIdentity',
    'Create a device key; its credentials (zdevice.json) are shown once',
  ),
  route('DELETE', '/workspaces/{workspaceId}/devices/{deviceId}/identities/{identityId}', 'identities', 'revokeIdentity', 'Revoke a device identity'),

  // The jobs and FOTA handlers stream (STREAMED_HANDLERS): a fleet-wide scheduling answers its
  // devices as their jobs are written, 100,000 of them past 29 s and 6 MB.
  route('GET', '/devices/{deviceId}/jobs', 'jobs', 'listJobs', 'List the jobs of a device, optionally by status'),
  route('GET', '/devices/{deviceId}/jobs/{jobName}', 'jobs', 'getJob', 'Get a job of a device'),
  route('POST', '/devices/{deviceId}/jobs/{jobName}', 'jobs', 'scheduleJob', 'Schedule (or replace) a job on a device'),
  route('DELETE', '/devices/{deviceId}/jobs/{jobName}', 'jobs', 'cancelJob', 'Cancel a device’s job that has not ended'),
  route('POST', '/workspace/{workspaceId}/jobs/{jobName}', 'jobs', 'scheduleFleetJobSingular', 'Schedule a job on fleets (singular path of the reference)'),
  route('POST', '/workspaces/{workspaceId}/jobs/{jobName}', 'jobs', 'scheduleFleetJob', 'Schedule a job on fleets'),

  route('GET', '/devices/{deviceId}/fota', 'fota', 'getFota', 'Get a device’s FOTA status'),
  route('DELETE', '/devices/{deviceId}/fota', 'fota', 'cancelFota', 'Cancel a device’s FOTA that has not ended'),
  route('POST', '/devices/{deviceId}/fota/{firmwareId}/versions/{firmwareVersion}', 'fota', 'scheduleFota', 'Schedule a FOTA on a device'),
  route('POST', '/workspaces/{workspaceId}/fota/{firmwareId}/versions/{firmwareVersion}', 'fota', 'scheduleFleetFota', 'Schedule a FOTA on fleets'),

  // Firmware artifacts (an addition to the v3 interface): images in S3, uploaded by presigned PUTs.
  route('GET', '/workspaces/{workspaceId}/firmwares', 'firmwares', 'listFirmwares', 'List a workspace’s firmware versions'),
  route(
    'POST',
    '/workspaces/{workspaceId}/firmwares/{firmwareId}/versions/{firmwareVersion}',
    'firmwares',
    'registerFirmware',
    'Register a firmware version by its size and SHA-256; answers a presigned S3 PUT for its image',
  ),
  route(
    'GET',
    '/workspaces/{workspaceId}/firmwares/{firmwareId}/versions/{firmwareVersion}',
    'firmwares',
    'getFirmware',
    'Get a firmware version (ready once S3 holds exactly its bytes)',
  ),
  route(
    'DELETE',
    '/workspaces/{workspaceId}/firmwares/{firmwareId}/versions/{firmwareVersion}',
    'firmwares',
    'deleteFirmware',
    'Delete a firmware version and its image (not while a FOTA that has not ended uses it)',
  ),

  // Rollouts (an addition to the v3 interface, operations.md §2): the record of each fleet-wide
  // scheduling, its live counts and devices, and its control. Lists stream, as every list does.
  // fleet-state.md §3: the fleet-wide desired state, a rollout of kind `state` (served by the rollouts handler: it streams, and records rollouts).
  route(
    'PATCH',
    '/workspaces/{workspaceId}/state',
    'rollouts',
    'changeFleetState',
    'Set desired state keys on the devices of fleets, a group or a query, as a rollout',
  ),
  route('GET', '/workspaces/{workspaceId}/rollouts', 'rollouts', 'listRollouts', 'List a workspace’s rollouts, newest first, with their counts'),
  route('GET', '/workspaces/{workspaceId}/rollouts/{rolloutId}', 'rollouts', 'getRollout', 'Get a rollout with its live counts'),
  route('GET', '/workspaces/{workspaceId}/rollouts/{rolloutId}/devices', 'rollouts', 'listRolloutDevices', 'List a rollout’s devices, optionally in one state'),
  route('POST', '/workspaces/{workspaceId}/rollouts/{rolloutId}/pause', 'rollouts', 'pauseRollout', 'Pause a rollout: no more releases'),
  route('POST', '/workspaces/{workspaceId}/rollouts/{rolloutId}/resume', 'rollouts', 'resumeRollout', 'Resume a paused rollout'),
  route(
    'POST',
    '/workspaces/{workspaceId}/rollouts/{rolloutId}/cancel',
    'rollouts',
    'cancelRollout',
    'Cancel a rollout: its queued and pending devices are canceled',
  ),

  // The device API: devices call it with their own token (Authorization: Bearer <device JWT>), at {base_url}/device.
  route('POST', '/device/data', 'device-api', 'publishData', 'Publish one data point or a batch; 202 once queued for storage and forwarding', 'device'),
  route('POST', '/device/events', 'device-api', 'reportDeviceEvents', 'Report one device event or a batch; 202 once queued for forwarding', 'device'),
  route('GET', '/device/status', 'device-api', 'getDeviceStatus', 'The device’s pending jobs, pending FOTA and desired state', 'device'),
  route('GET', '/device/state', 'device-api', 'getDeviceSideState', 'The device’s desired and reported state, their delta and version', 'device'),
  route('POST', '/device/state', 'device-api', 'reportDeviceState', 'Report the device’s state (merged into its reported keys; null removes one)', 'device'),
  route(
    'POST',
    '/device/jobs/{jobName}/result',
    'device-api',
    'reportJobResult',
    'Report a job’s result; the job becomes done (failed for a result with an error)',
    'device',
  ),
  route('POST', '/device/conditions', 'device-api', 'reportCondition', 'Open a condition (with a tag) or close one (its uuid)', 'device'),
  route('POST', '/device/fota/result', 'device-api', 'reportFotaResult', 'Report a FOTA’s progress (in_progress) or outcome (done, failed)', 'device'),

  route('GET', '/workspaces/{workspaceId}/api-keys', 'api-keys', 'listApiKeys', 'List a workspace’s API keys (never their secrets)'),
  route('POST', '/workspaces/{workspaceId}/api-keys', 'api-keys', 'createApiKey', 'Create an API key (the secret is shown once)'),
  route('DELETE', '/workspaces/{workspaceId}/api-keys/{keyId}', 'api-keys', 'revokeApiKey', 'Revoke an API key'),

  route('GET', '/workspaces/{workspaceId}/integrations', 'integrations', 'listIntegrations', 'List a workspace’s webhook integrations (never their secrets)'),
  route(
    'POST',
    '/workspaces/{workspaceId}/integrations',
    'integrations',
    'createIntegration',
    'Create a webhook integration (the signing secret is shown once)',
  ),
  route('GET', '/workspaces/{workspaceId}/integrations/{integrationId}', 'integrations', 'getIntegration', 'Get a webhook integration and its delivery status'),
  route(
    'PATCH',
    '/workspaces/{workspaceId}/integrations/{integrationId}',
    'integrations',
    'updateIntegration',
    'Change some settings of a webhook integration',
  ),
  route('DELETE', '/workspaces/{workspaceId}/integrations/{integrationId}', 'integrations', 'deleteIntegration', 'Delete a webhook integration'),
  route(
    'POST',
    '/workspaces/{workspaceId}/integrations/{integrationId}/secret',
    'integrations',
    'rotateIntegrationSecret',
    'Issue a new signing secret (shown once; the old one signs too for 24 h)',
  ),
  // An addition to the v3 interface (the console's "Send test delivery"): one signed test batch, sent while the caller waits.
  route(
    'POST',
    '/workspaces/{workspaceId}/integrations/{integrationId}/test',
    'integrations',
    'testIntegration',
    'Send a signed test batch to a webhook now and answer how it went',
  ),
  // Additions to the v3 interface (issue 33): a webhook's last POSTs, and the DLQ replay of what it missed.
  route(
    'GET',
    '/workspaces/{workspaceId}/integrations/{integrationId}/deliveries',
    'integrations',
    'listIntegrationDeliveries',
    'A webhook’s last deliveries, newest first: time, outcome, HTTP status, error, duration, batch size',
  ),
  route(
    'POST',
    '/workspaces/{workspaceId}/integrations/{integrationId}/replay',
    'integrations',
    'replayIntegrationDeadLetters',
    'Move the workspace’s dead-lettered messages this webhook has not received back to the forward queue',
  ),

  // Additions to the v3 interface (spec/operations.md §5): what a workspace may hold and do, and what it did.
  route('GET', '/workspaces/{workspaceId}/limits', 'limits', 'getWorkspaceLimits', 'A workspace’s limits: its quotas and rates'),
  route('GET', '/workspaces/{workspaceId}/usage', 'limits', 'getWorkspaceUsage', 'A workspace’s usage per UTC day: points, API requests, webhook POSTs'),

  // The storage API ({storage_url}): streamed, so that a page of 175,000 records needs no 6 MB buffer.
  route(
    'GET',
    '/timeseries/{workspaceId}/data',
    'timeseries',
    'queryTimeseries',
    'A page of a workspace’s data points, by time range, devices, tags and fleets',
  ),
  // An addition to the v3 interface (spec/operations.md §4): what a client would compute from the raw points, in calendar buckets of a time zone.
  route(
    'GET',
    '/timeseries/{workspaceId}/aggregate',
    'timeseries',
    'aggregateTimeseries',
    'Avg, min, max, sum and count of a payload field per bucket of time (and device)',
  ),
  // Additions to the v3 interface (spec/operations.md §4): the points of a query as one file in S3, of any size, made in the background.
  route(
    'POST',
    '/timeseries/{workspaceId}/exports',
    'timeseries',
    'createExport',
    'Export the points of a storage query to a CSV or NDJSON file; 202 while it is written',
  ),
  route('GET', '/timeseries/{workspaceId}/exports', 'timeseries', 'listExports', 'List a workspace’s exports, newest first'),
  route('GET', '/timeseries/{workspaceId}/exports/{exportId}', 'timeseries', 'getExport', 'An export’s progress, and its file’s download URL once ready'),

  route('GET', '/openapi.json', 'openapi', 'getOpenApi', 'This interface as an OpenAPI 3.1 document', 'none'),
];

/** The rows one handler serves. */
export const routesOf = (handler: RouteHandler): Route[] => ROUTES.filter((r) => r.handler === handler);

/** Every handler named by the table, once. */
export const ROUTE_HANDLERS: readonly RouteHandler[] = [...new Set(ROUTES.map((r) => r.handler))];
