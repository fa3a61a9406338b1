import * as z from 'zod';
import { ROUTES } from '../routes';
import { ApiKeyListResponseSchema, ApiKeyPathSchema, ApiKeyResponseSchema, CreateApiKeyBodySchema, CreatedApiKeyResponseSchema } from './api-key';
import {
  CreateDeviceBodySchema,
  DeviceListResponseSchema,
  DevicePathSchema,
  DeviceResponseSchema,
  UpdateDeviceBodySchema,
} from './device';
import {
  AcceptedResponseSchema,
  DeviceJobResultPathSchema,
  DeviceStatusSchema,
  FotaResultBodySchema,
  JobResultBodySchema,
  PublishDataBodySchema,
  ReportEventsBodySchema,
} from './device-api';
import { ErrorResponseSchema } from './error';
import {
  CreatedIdentityResponseSchema,
  CreateIdentityBodySchema,
  IdentityListResponseSchema,
  IdentityPathSchema,
  IdentityResponseSchema,
} from './identity';
import { CreateFleetBodySchema, FleetListResponseSchema, FleetPathSchema, FleetResponseSchema } from './fleet';
import {
  CreateIntegrationBodySchema,
  IntegrationListResponseSchema,
  IntegrationPathSchema,
  IntegrationResponseSchema,
  IntegrationWithSecretResponseSchema,
  UpdateIntegrationBodySchema,
} from './integration';
import { DeviceFotaPathSchema, FotaResponseSchema, ScheduleFleetFotaPathSchema, ScheduleFotaPathSchema } from './fota';
import {
  DeviceJobPathSchema,
  DeviceJobsPathSchema,
  FleetJobPathSchema,
  FleetsQuerySchema,
  JobListResponseSchema,
  JobResponseSchema,
  ListJobsQuerySchema,
  ScheduleJobBodySchema,
} from './job';
import { TimeseriesQuerySchema, TimeseriesResponseSchema } from './timeseries';
import { CreateWorkspaceBodySchema, WorkspaceListResponseSchema, WorkspacePathSchema, WorkspaceResponseSchema } from './workspace';

/** The schemas of one operation: what it reads and what it answers with 200. */
export interface Operation {
  path?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  response: z.ZodType;
  /** The success status when it is not 200 (202: accepted for later processing). */
  status?: number;
}

/** Every operation of the route table, by operationId. */
export const OPERATIONS: Record<string, Operation> = {
  listWorkspaces: { response: WorkspaceListResponseSchema },
  createWorkspace: { body: CreateWorkspaceBodySchema, response: WorkspaceResponseSchema },
  getWorkspace: { path: WorkspacePathSchema, response: WorkspaceResponseSchema },
  listFleets: { path: WorkspacePathSchema, response: FleetListResponseSchema },
  createFleet: { path: WorkspacePathSchema, body: CreateFleetBodySchema, response: FleetResponseSchema },
  getFleet: { path: FleetPathSchema, response: FleetResponseSchema },
  listDevices: { path: WorkspacePathSchema, response: DeviceListResponseSchema },
  createDevice: { path: WorkspacePathSchema, body: CreateDeviceBodySchema, response: DeviceResponseSchema },
  getDevice: { path: DevicePathSchema, response: DeviceResponseSchema },
  updateDevice: { path: DevicePathSchema, body: UpdateDeviceBodySchema, response: DeviceResponseSchema },
  listIdentities: { path: DevicePathSchema, response: IdentityListResponseSchema },
  createIdentity: { path: DevicePathSchema, body: CreateIdentityBodySchema, response: CreatedIdentityResponseSchema },
  revokeIdentity: { path: IdentityPathSchema, response: IdentityResponseSchema },
  listJobs: { path: DeviceJobsPathSchema, query: ListJobsQuerySchema, response: JobListResponseSchema },
  getJob: { path: DeviceJobPathSchema, response: JobResponseSchema },
  scheduleJob: { path: DeviceJobPathSchema, body: ScheduleJobBodySchema, response: JobResponseSchema },
  scheduleFleetJob: { path: FleetJobPathSchema, query: FleetsQuerySchema, body: ScheduleJobBodySchema, response: JobResponseSchema },
  scheduleFleetJobSingular: { path: FleetJobPathSchema, query: FleetsQuerySchema, body: ScheduleJobBodySchema, response: JobResponseSchema },
  getFota: { path: DeviceFotaPathSchema, response: FotaResponseSchema },
  scheduleFota: { path: ScheduleFotaPathSchema, response: FotaResponseSchema },
  scheduleFleetFota: { path: ScheduleFleetFotaPathSchema, query: FleetsQuerySchema, response: FotaResponseSchema },
  publishData: { body: PublishDataBodySchema, response: AcceptedResponseSchema, status: 202 },
  reportDeviceEvents: { body: ReportEventsBodySchema, response: AcceptedResponseSchema, status: 202 },
  getDeviceStatus: { response: DeviceStatusSchema },
  reportJobResult: { path: DeviceJobResultPathSchema, body: JobResultBodySchema, response: JobResponseSchema },
  reportFotaResult: { body: FotaResultBodySchema, response: FotaResponseSchema },
  listApiKeys: { path: WorkspacePathSchema, response: ApiKeyListResponseSchema },
  createApiKey: { path: WorkspacePathSchema, body: CreateApiKeyBodySchema, response: CreatedApiKeyResponseSchema },
  revokeApiKey: { path: ApiKeyPathSchema, response: ApiKeyResponseSchema },
  listIntegrations: { path: WorkspacePathSchema, response: IntegrationListResponseSchema },
  createIntegration: { path: WorkspacePathSchema, body: CreateIntegrationBodySchema, response: IntegrationWithSecretResponseSchema },
  getIntegration: { path: IntegrationPathSchema, response: IntegrationResponseSchema },
  updateIntegration: { path: IntegrationPathSchema, body: UpdateIntegrationBodySchema, response: IntegrationResponseSchema },
  deleteIntegration: { path: IntegrationPathSchema, response: IntegrationResponseSchema },
  rotateIntegrationSecret: { path: IntegrationPathSchema, response: IntegrationWithSecretResponseSchema },
  queryTimeseries: { path: WorkspacePathSchema, query: TimeseriesQuerySchema, response: TimeseriesResponseSchema },
  getOpenApi: { response: z.record(z.string(), z.unknown()) },
};

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] };

/** JSON Schema of a zod schema, its named parts moved to `components.schemas`. */
const toSchema = (schema: z.ZodType, components: Record<string, unknown>, io: 'input' | 'output'): JsonSchema => {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  const text = JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/');
  const { $schema: _s, $defs, ...rest } = JSON.parse(text) as JsonSchema & { $defs?: Record<string, unknown> };
  Object.assign(components, $defs);
  if (typeof rest.id === 'string') {
    // a named schema at the top: reference it, like its uses inside other schemas
    const { id, ...named } = rest;
    components[id] = named;
    return { $ref: `#/components/schemas/${id}` };
  }
  return rest;
};

const parameters = (where: 'path' | 'query', schema: z.ZodObject | undefined, components: Record<string, unknown>) => {
  if (!schema) return [];
  const json = toSchema(schema, components, 'input');
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    schema: s,
  }));
};

const errorAnswer = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** The OpenAPI 3.1 document of the whole interface, built from the route table and the zod schemas. */
export const buildOpenApi = () => {
  const components: Record<string, unknown> = {};
  toSchema(ErrorResponseSchema, components, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const op = OPERATIONS[route.operationId];
    if (!op) throw new Error(`No OpenAPI operation for ${route.operationId}`);
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.handler],
      ...(route.auth === 'none' ? { security: [] } : route.auth === 'device' ? { security: [{ deviceToken: [] }] } : {}),
      parameters: [...parameters('path', op.path, components), ...parameters('query', op.query, components)],
      ...(op.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(op.body, components, 'input') } } } }
        : {}),
      responses: {
        [op.status ?? 200]: {
          description: op.status === 202 ? 'Accepted' : 'OK',
          content: { 'application/json': { schema: toSchema(op.response, components, 'output') } },
        },
        '400': errorAnswer('Invalid input; details name each bad field'),
        '401': errorAnswer(route.auth === 'device' ? 'Missing, bad, expired or revoked device token' : 'Missing, unknown, revoked or expired API key'),
        '404': errorAnswer('Not found, or not in the caller’s account'),
        '429': errorAnswer('Throttled'),
        '500': errorAnswer('Internal error'),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Fleetstream v3',
      version: '3.0.0',
      description: 'Device management, time-series storage and webhook interface (Zerynth Device Manager v3 compatible).',
    },
    servers: [{ url: '/v3' }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
        deviceToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A device token: HS256 JWT with sub = device ID, key = identity ID, exp ≤ 1 h ahead, signed with the identity’s key',
        },
      },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
};
