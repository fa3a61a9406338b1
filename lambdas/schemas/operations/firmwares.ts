import { FirmwareListResponseSchema, FirmwareResponseSchema, FirmwareVersionPathSchema, RegisterFirmwareBodySchema } from '../firmware';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `firmwares` handler's operations. */
export const FIRMWARE_OPERATIONS = {
  listFirmwares: { path: WorkspacePathSchema, query: PageQuerySchema, response: FirmwareListResponseSchema },
  registerFirmware: {
    path: FirmwareVersionPathSchema,
    body: RegisterFirmwareBodySchema,
    response: FirmwareResponseSchema,
    status: 201,
    conflict: 'The version is already ready (a ready version never changes: delete it first), or it is registered with another size or SHA-256',
    quota: 'A new version, and the workspace holds its limit of firmware versions (limits.firmware_versions)',
  },
  getFirmware: { path: FirmwareVersionPathSchema, response: FirmwareResponseSchema },
  deleteFirmware: {
    path: FirmwareVersionPathSchema,
    response: FirmwareResponseSchema,
    conflict: 'A FOTA that has not ended (queued, pending or in progress) uses the version',
  },
} satisfies Operations;
