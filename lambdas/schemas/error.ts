import * as z from 'zod';

export const ErrorResponseSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'not_found' }),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string() })),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'Error' });
