import type { RouteHandler } from '../../routes';
import type { Operations } from '../operation';
import { ALARM_OPERATIONS } from './alarms';
import { API_KEY_OPERATIONS } from './api-keys';
import { DEVICE_API_OPERATIONS } from './device-api';
import { DEVICE_OPERATIONS } from './devices';
import { FIRMWARE_OPERATIONS } from './firmwares';
import { FLEET_OPERATIONS } from './fleets';
import { FOTA_OPERATIONS } from './fota';
import { GROUP_OPERATIONS } from './groups';
import { STATE_OPERATIONS } from './state';
import { IDENTITY_OPERATIONS } from './identities';
import { INTEGRATION_OPERATIONS } from './integrations';
import { JOB_OPERATIONS } from './jobs';
import { LIMITS_OPERATIONS } from './limits';
import { OPENAPI_OPERATIONS } from './openapi';
import { ROLLOUT_OPERATIONS } from './rollouts';
import { TIMESERIES_OPERATIONS } from './timeseries';
import { WORKSPACE_OPERATIONS } from './workspaces';

/**
 * Every handler's operations. Each handler imports only its own table (one file per handler, so
 * that its bundle holds only its schemas); the OpenAPI document reads them all from here.
 */
export const OPERATIONS_BY_HANDLER: Record<RouteHandler, Operations> = {
  workspaces: WORKSPACE_OPERATIONS,
  fleets: FLEET_OPERATIONS,
  devices: DEVICE_OPERATIONS,
  identities: IDENTITY_OPERATIONS,
  jobs: JOB_OPERATIONS,
  fota: FOTA_OPERATIONS,
  firmwares: FIRMWARE_OPERATIONS,
  'api-keys': API_KEY_OPERATIONS,
  integrations: INTEGRATION_OPERATIONS,
  timeseries: TIMESERIES_OPERATIONS,
  limits: LIMITS_OPERATIONS,
  'device-api': DEVICE_API_OPERATIONS,
  rollouts: ROLLOUT_OPERATIONS,
  groups: GROUP_OPERATIONS,
  state: STATE_OPERATIONS,
  alarms: ALARM_OPERATIONS,
  openapi: OPENAPI_OPERATIONS,
};

/** Every operation of the route table, by operationId. */
export const OPERATIONS: Operations = Object.assign({}, ...Object.values(OPERATIONS_BY_HANDLER));
