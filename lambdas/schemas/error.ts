import * as z from 'zod';

/**
 * The `error.code` of each status (DESIGN §7). `bad_request` is API Gateway's answer to a request
 * it refuses itself before any handler (its DEFAULT_4XX gateway response).
 */
export const ERROR_CODES = {
  400: ['validation_error', 'bad_request'],
  401: ['unauthorized'],
  403: ['forbidden'],
  404: ['not_found'],
  409: ['conflict'],
  413: ['payload_too_large'],
  414: ['bad_request'],
  415: ['unsupported_media_type'],
  429: ['throttled', 'rate_limited', 'quota_exceeded'],
  431: ['bad_request'],
  500: ['internal_error'],
} as const;

export const ErrorResponseSchema = z
  .object({
    error: z.object({
      code: z.enum([...new Set(Object.values(ERROR_CODES).flat())] as [string, ...string[]]).meta({ example: 'not_found' }),
      message: z.string(),
      details: z
        .array(
          z.object({
            field: z.string().meta({ example: 'body.name' }),
            message: z.string(),
            value: z.number().optional().meta({ description: 'The value of the limit a 429 names (field `limits.<name>`)' }),
          }),
        )
        .meta({ description: 'Each bad field (400), why a signed device token is refused (401), or the limit met (429)' }),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'Error' });
