import * as z from 'zod';
import { DateSchema, DescriptionSchema, PathTokenSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';
import { NextSchema } from './list';

/** Largest firmware image (2 GiB): far below S3's 5 GiB for one PUT, so one presigned PUT uploads any of them. */
export const FIRMWARE_SIZE_MAX = 2 * 1024 ** 3;

/** Where a firmware version is in its life: registered and waiting for its bytes, or stored and checked. */
export const FIRMWARE_STATUSES = ['awaiting_upload', 'ready'] as const;
export type FirmwareStatus = (typeof FIRMWARE_STATUSES)[number];

/** A presigned request the client sends itself, straight to S3. */
export const PresignedRequestSchema = z
  .object({
    method: z.literal('PUT'),
    url: z.string().meta({ description: 'A presigned S3 URL: send the request there, with no API key' }),
    headers: z.record(z.string(), z.string()).meta({
      description:
        'Headers the request must carry exactly as given (x-amz-checksum-sha256): the URL is signed with them, and S3 refuses bytes whose SHA-256 is not the registered one',
    }),
    expires_at: DateSchema.meta({ description: 'The URL is refused from then on (403); register the version again for a new one' }),
  })
  .meta({ id: 'FirmwareUpload' });

export const FirmwareSchema = z
  .object({
    workspace_id: WorkspaceIdSchema,
    firmware_id: z.string(),
    version: z.string(),
    size: z.int().meta({ description: 'Bytes' }),
    sha256: z.string().meta({ description: 'SHA-256 of the image, 64 lowercase hex digits' }),
    description: z.string(),
    status: z.enum(FIRMWARE_STATUSES).meta({
      description:
        'awaiting_upload until S3 holds exactly the registered bytes (size and SHA-256), then ready; only a ready version can be scheduled as a FOTA',
    }),
    created_at: DateSchema,
    updated_at: DateSchema,
    upload: PresignedRequestSchema.optional().meta({ description: 'Only in the answer to a registration: how to upload the image' }),
  })
  .meta({ id: 'Firmware' });
export type Firmware = z.infer<typeof FirmwareSchema>;

export const FirmwareVersionPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, firmwareId: PathTokenSchema, firmwareVersion: PathTokenSchema });

export const RegisterFirmwareBodySchema = z
  .strictObject({
    size: z
      .int()
      .min(1, 'Must be at least 1 byte.')
      .max(FIRMWARE_SIZE_MAX, `Must be at most ${FIRMWARE_SIZE_MAX} bytes (2 GiB).`)
      .meta({ description: `Bytes of the image, 1 to ${FIRMWARE_SIZE_MAX} (2 GiB)` }),
    sha256: z
      .string()
      .regex(/^[0-9A-Fa-f]{64}$/, 'Must be a SHA-256: 64 hex digits.')
      .transform((hex) => hex.toLowerCase())
      .meta({ description: 'SHA-256 of the image, 64 hex digits (stored lowercase)' }),
    description: DescriptionSchema.default(''),
  })
  .meta({ id: 'RegisterFirmware' });
export type RegisterFirmwareBody = z.infer<typeof RegisterFirmwareBodySchema>;

export const FirmwareResponseSchema = z.object({ firmware: FirmwareSchema });
export const FirmwareListResponseSchema = z.object({ firmwares: z.array(FirmwareSchema), next: NextSchema });
