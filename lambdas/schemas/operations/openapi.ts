import * as z from 'zod';
import type { Operations } from '../operation';

/** The `openapi` handler's operation: the document itself. */
export const OPENAPI_OPERATIONS = {
  getOpenApi: { response: z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document' }) },
} satisfies Operations;
