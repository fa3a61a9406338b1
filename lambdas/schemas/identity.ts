import * as z from 'zod';
import { NextSchema } from './list';
import { DateSchema, DeviceIdRefSchema, DeviceIdSchema, IdentityIdRefSchema, WorkspaceIdRefSchema, idSchema } from './common';

export const IdentityIdSchema = idSchema('idn');

/** Kinds of device credential; only symmetric keys (HS256-signed device tokens) for now. */
export const IDENTITY_TYPES = ['sym'] as const;
export const IdentityTypeSchema = z.enum(IDENTITY_TYPES);

/** A device credential as listed: never its secret. */
export const IdentitySchema = z
  .object({
    id: IdentityIdSchema,
    type: IdentityTypeSchema,
    device_id: DeviceIdSchema,
    created_at: DateSchema,
    revoked_at: DateSchema.nullable(),
  })
  .meta({ id: 'Identity' });
export type Identity = z.infer<typeof IdentitySchema>;

export const IdentityPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, deviceId: DeviceIdRefSchema, identityId: IdentityIdRefSchema });

export const CreateIdentityBodySchema = z.strictObject({ type: IdentityTypeSchema.default('sym') }).meta({ id: 'CreateIdentity' });
export type CreateIdentityBody = z.infer<typeof CreateIdentityBodySchema>;

/**
 * The credentials document a device reads, in the `zdevice.json` layout of existing device
 * clients: the device signs its tokens with the base64-decoded `prvkey`.
 */
export const DeviceCredentialsSchema = z
  .object({
    devinfo: z.object({
      device_id: DeviceIdSchema,
      mode: z.literal('device_token'),
      key_id: IdentityIdSchema.meta({ description: 'The identity ID: the `key` claim of the device’s tokens' }),
      key_type: IdentityTypeSchema,
    }),
    prvkey: z.string().meta({ description: 'The HS256 key, base64; shown only in this answer' }),
    endpoint: z
      .object({
        host: z.string(),
        port: z.number().int(),
        mode: z.enum(['secure', 'insecure']).meta({ description: 'secure: TLS (MQTT over TLS 1.2; HTTPS when no broker is configured)' }),
        url: z.string().meta({ description: 'Base address of the HTTPS device API', example: 'https://api.example.com/v3/device' }),
      })
      .meta({ description: 'host and port: the MQTT broker (the HTTPS device API when no broker is configured); url: the HTTPS device API' }),
    cacert: z.string().optional().meta({ description: 'PEM of the CA that signed the MQTT broker’s certificate; present when the broker uses TLS' }),
  })
  .meta({ id: 'DeviceCredentials' });
export type DeviceCredentials = z.infer<typeof DeviceCredentialsSchema>;

export const IdentityResponseSchema = z.object({ identity: IdentitySchema });
export const IdentityListResponseSchema = z.object({ identities: z.array(IdentitySchema), next: NextSchema });
export const CreatedIdentityResponseSchema = z.object({ identity: IdentitySchema, credentials: DeviceCredentialsSchema }).meta({ id: 'CreatedIdentity' });
