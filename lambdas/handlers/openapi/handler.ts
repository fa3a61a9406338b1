import { OPENAPI_OPERATIONS } from '../../schemas/operations/openapi';
import { ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';
import document from './openapi.json';

export const handler = httpHandler('openapi', OPENAPI_OPERATIONS, { getOpenApi: async () => ok(200, document) });
