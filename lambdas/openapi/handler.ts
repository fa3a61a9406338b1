import { ok } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import document from './openapi.json';

const getOpenApiRoute = async () => ok(200, document);

export const handler = httpHandler('openapi', { getOpenApi: getOpenApiRoute });
