import * as z from 'zod';
import { NextSchema } from './list';
import { DateSchema, IntegrationIdRefSchema, NameSchema, TokenSchema, WorkspaceIdRefSchema, WorkspaceIdSchema, idSchema } from './common';

/** Limits of an integration (DESIGN §7): URL length, tags in a filter (integrations per workspace are a quota: schemas/limits.ts). */
export const WEBHOOK_URL_MAX = 2048;
export const INTEGRATION_TAGS_MAX = 50;

export const IntegrationIdSchema = idSchema('int');

export const WebhookUrlSchema = z
  .url({ protocol: /^https?$/, error: 'Must be an absolute http(s) URL.' })
  .max(WEBHOOK_URL_MAX, `Must be at most ${WEBHOOK_URL_MAX} characters.`)
  .meta({
    description: 'https to a public address (the local runtime also takes http and private addresses)',
    example: 'https://example.com/hooks/fleetstream',
    // the scheme rule, as JSON Schema can say it (schemes are case-insensitive)
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?:',
  });

const TagsSchema = z
  .array(TokenSchema)
  .max(INTEGRATION_TAGS_MAX, `At most ${INTEGRATION_TAGS_MAX} tags.`)
  .meta({ description: 'Only data points with one of these tags are sent; empty sends every tag. Events are not filtered by tag.' });

/** How deliveries to an integration went lately. */
export const IntegrationStatusSchema = z
  .object({
    last_delivery_at: DateSchema.nullable().meta({ description: 'Last POST answered with 2xx' }),
    last_error_at: DateSchema.nullable(),
    last_error: z.string().nullable().meta({ description: 'What went wrong on the last failed POST' }),
    consecutive_failures: z.int().nonnegative().meta({ description: 'Failed deliveries (one per forwarder batch) since the last success' }),
    failing_since: DateSchema.nullable().meta({ description: 'When the first of the consecutive failures happened; null while deliveries succeed' }),
  })
  .meta({ id: 'IntegrationStatus' });
export type IntegrationStatus = z.infer<typeof IntegrationStatusSchema>;

/** A webhook of a workspace, as listed: never its signing secret. */
export const IntegrationSchema = z
  .object({
    id: IntegrationIdSchema,
    workspace_id: WorkspaceIdSchema,
    name: z.string(),
    url: z.string(),
    data: z.boolean().meta({ description: 'Sends data points' }),
    events: z.boolean().meta({ description: 'Sends events' }),
    tags: z.array(z.string()),
    enabled: z.boolean(),
    created_at: DateSchema,
    updated_at: DateSchema,
    previous_secret_expires_at: DateSchema.nullable().meta({
      description: 'After a rotation, POSTs are also signed with the previous secret until then',
    }),
    status: IntegrationStatusSchema,
  })
  .meta({ id: 'Integration' });
export type Integration = z.infer<typeof IntegrationSchema>;

export const IntegrationPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, integrationId: IntegrationIdRefSchema });

export const CreateIntegrationBodySchema = z
  .strictObject({
    name: NameSchema.default('webhook'),
    url: WebhookUrlSchema,
    data: z.boolean().default(true),
    events: z.boolean().default(true),
    tags: TagsSchema.default([]),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'CreateIntegration' });
export type CreateIntegrationBody = z.infer<typeof CreateIntegrationBodySchema>;

export const UpdateIntegrationBodySchema = z
  .strictObject({
    name: NameSchema.optional(),
    url: WebhookUrlSchema.optional(),
    data: z.boolean().optional(),
    events: z.boolean().optional(),
    tags: TagsSchema.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change.')
  .meta({ id: 'UpdateIntegration', minProperties: 1 });
export type UpdateIntegrationBody = z.infer<typeof UpdateIntegrationBodySchema>;

export const IntegrationResponseSchema = z.object({ integration: IntegrationSchema });
export const IntegrationListResponseSchema = z.object({ integrations: z.array(IntegrationSchema), next: NextSchema });
export const IntegrationWithSecretResponseSchema = z
  .object({
    integration: IntegrationSchema,
    secret: z.string().meta({ description: 'The signing secret, shown only in this answer' }),
  })
  .meta({ id: 'IntegrationWithSecret' });

/** What a test delivery did: the receiver's answer, or what went wrong, and how long it took. */
export const TestDeliverySchema = z
  .object({
    ok: z.boolean().meta({ description: 'The receiver answered with 2xx' }),
    status: z.int().nullable().meta({ description: 'The HTTP status the receiver answered with; null when no answer came' }),
    error: z.string().nullable().meta({
      description: 'What went wrong, as the status’s last_error records it (HTTP status, refused connection, unknown host, timeout, …); null on success',
    }),
    duration_ms: z.int().nonnegative().meta({ description: 'From the start of the POST to its answer or failure' }),
    batch_id: z.string().meta({ description: 'The test batch’s batch_id (starts with "test-")' }),
    kind: z.enum(['data', 'events']).meta({ description: 'What the test batch holds: a data point when the integration sends data, else an event' }),
  })
  .meta({ id: 'TestDelivery' });
export type TestDelivery = z.infer<typeof TestDeliverySchema>;

export const TestDeliveryResponseSchema = z
  .object({
    delivery: TestDeliverySchema,
    // with its status after the test
    integration: IntegrationSchema,
  })
  .meta({ id: 'TestDeliveryResult' });

/** Deliveries a delivery log answers at most (`limit`), and by default. */
export const DELIVERY_LOG_LIMIT_MAX = 100;
export const DELIVERY_LOG_LIMIT_DEFAULT = 20;

/** One webhook POST as the delivery log keeps it (a forwarder batch's POST, or a test delivery). */
export const DeliverySchema = z
  .object({
    at: DateSchema.meta({ description: 'When the POST started' }),
    ok: z.boolean().meta({ description: 'The receiver answered with 2xx' }),
    status: z.int().nullable().meta({ description: 'The HTTP status the receiver answered with; null when no answer came' }),
    error: z.string().nullable().meta({ description: 'What went wrong (as the status’s last_error says it); null on success' }),
    duration_ms: z.int().nonnegative().meta({ description: 'From the start of the POST to its answer or failure' }),
    entries: z.int().nonnegative().meta({ description: 'Points or events in the POST’s batch' }),
    kind: z.enum(['data', 'events']),
    batch_id: z.string().meta({ description: 'The POST’s batch_id (x-fleetstream-batch-id)' }),
    test: z.boolean().meta({ description: 'A test delivery (POST …/test), not a forwarded batch' }),
  })
  .meta({ id: 'Delivery' });
export type Delivery = z.infer<typeof DeliverySchema>;

export const DeliveryLogQuerySchema = z.strictObject({
  limit: z
    .string()
    .regex(/^\d{1,6}$/, `Must be an integer from 1 to ${DELIVERY_LOG_LIMIT_MAX}.`)
    .transform(Number)
    .pipe(z.number().min(1, 'Must be at least 1.').max(DELIVERY_LOG_LIMIT_MAX, `Must be at most ${DELIVERY_LOG_LIMIT_MAX}.`))
    .optional()
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: DELIVERY_LOG_LIMIT_MAX,
      description: `Integer from 1 to ${DELIVERY_LOG_LIMIT_MAX}: the newest this many deliveries (default ${DELIVERY_LOG_LIMIT_DEFAULT})`,
    }),
});

export const DeliveryLogResponseSchema = z
  .object({ deliveries: z.array(DeliverySchema).meta({ description: 'Newest first; each kept 7 days' }) })
  .meta({ id: 'DeliveryLog' });

/** What a DLQ replay did (POST …/integrations/{id}/replay). */
export const ReplaySchema = z
  .object({
    moved: z.int().nonnegative().meta({ description: 'Dead-lettered messages moved back to the forward queue for this webhook' }),
    examined: z.int().nonnegative().meta({ description: 'Dead-lettered messages looked at (other workspaces’ and webhooks’ were put back untouched)' }),
    complete: z.boolean().meta({
      description: 'The dead-letter queue looked empty of other messages when the replay ended; false: it stopped at its time or count bound, call again',
    }),
  })
  .meta({ id: 'Replay' });
export type Replay = z.infer<typeof ReplaySchema>;
export const ReplayResponseSchema = z.object({ replay: ReplaySchema, integration: IntegrationSchema }).meta({ id: 'ReplayResult' });
