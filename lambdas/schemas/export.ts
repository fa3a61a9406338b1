import * as z from 'zod';
import { DateSchema, DeviceIdRefSchema, idRefSchema, idSchema, WorkspaceIdRefSchema, WorkspaceIdSchema } from './common';
import { TagSchema } from './device-api';
import { NextSchema } from './list';
import { BoundSchema, FleetFilterSchema, startNotAfterEnd, TIMESERIES_FILTER_MAX } from './timeseries';

/** The file formats of an export: CSV (RFC 4180) or one JSON record a line. */
export const EXPORT_FORMATS = ['csv', 'ndjson'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Where an export is in its life; one that is gone after its lifetime is not found (404). */
export const EXPORT_STATUSES = ['running', 'ready', 'failed'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/** The storage query's filters, as an export keeps them: which points its file holds. */
const filterShape = {
  start: BoundSchema.optional().meta({ description: 'Included lower bound on timestamp_device; must not be after end' }),
  end: BoundSchema.optional().meta({ description: 'Excluded upper bound on timestamp_device; must not be before start' }),
  device: z.array(DeviceIdRefSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} devices.`).optional(),
  tag: z.array(TagSchema).max(TIMESERIES_FILTER_MAX, `At most ${TIMESERIES_FILTER_MAX} tags.`).optional(),
  fleet: FleetFilterSchema,
};

/**
 * An export request (spec/operations.md §4): the storage query's filters and the file's format.
 * Without filters it exports every point the workspace keeps.
 */
export const CreateExportBodySchema = z
  .strictObject({
    format: z.enum(EXPORT_FORMATS).meta({
      description:
        '`csv`: the columns device_id, fleet_id, tag, timestamp_device, timestamp_in, payload (the payload as JSON text), RFC 4180; `ndjson`: one record a line, as the storage query answers it',
    }),
    ...filterShape,
    names: z.boolean().optional().meta({
      description:
        "true: each point also carries its device's current name and its fleet's name (CSV: the columns device_name and fleet_name after payload; NDJSON: the fields device_name and fleet_name after payload; empty or null for a device or fleet deleted since). Absent or false: the file is as without this option",
    }),
  })
  .refine(startNotAfterEnd, { message: 'Must not be after end.', path: ['start'] })
  .meta({ id: 'CreateExport' });
export type CreateExportBody = z.infer<typeof CreateExportBodySchema>;

/** The filters an export was asked with, as it shows them. */
export const ExportFiltersSchema = z.object(filterShape).meta({ id: 'ExportFilters' });
export type ExportFilters = z.infer<typeof ExportFiltersSchema>;

export const ExportIdSchema = idSchema('exp');

/** An export as the API shows it. */
export const ExportSchema = z
  .object({
    id: ExportIdSchema,
    workspace_id: WorkspaceIdSchema,
    status: z
      .enum(EXPORT_STATUSES)
      .meta({ description: 'running until the file is whole in S3, then ready (or failed); an export is gone (404) once it expires' }),
    format: z.enum(EXPORT_FORMATS),
    filters: ExportFiltersSchema,
    names: z
      .literal(true)
      .optional()
      .meta({ description: 'Present (true) only when the export was asked with names: its file has device_name and fleet_name' }),
    rows: z.int().min(0).meta({ description: 'Data points in the file so far (while running: in the parts written; the CSV header is not a row)' }),
    bytes: z.int().min(0).meta({ description: 'Bytes of the file so far' }),
    created_at: DateSchema,
    updated_at: DateSchema,
    completed_at: DateSchema.nullable().meta({ description: 'When it became ready or failed' }),
    expires_at: DateSchema.nullable().meta({ description: 'When the export and its file are deleted (its lifetime after it ended); null while running' }),
    url: z.string().nullable().meta({ description: 'When ready: a presigned S3 GET of the whole file (no API key); a new one on every read' }),
    url_expires_at: DateSchema.nullable().meta({
      description: 'When this url stops working (an hour, or expires_at if sooner): read the export again for a fresh one',
    }),
    error: z.object({ code: z.string(), message: z.string() }).nullable().meta({ description: 'When failed: why, and what to do (start a new export)' }),
  })
  .meta({ id: 'Export' });
export type Export = z.infer<typeof ExportSchema>;

export const ExportPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, exportId: idRefSchema('exp') });

export const ExportResponseSchema = z.object({ export: ExportSchema });
export const ExportListResponseSchema = z.object({ exports: z.array(ExportSchema).meta({ description: 'Newest first' }), next: NextSchema });

/** A message of the export queue: run (or go on with) an export. */
export const ExportJobSchema = z.strictObject({
  account_id: z.string().min(1),
  workspace_id: z.string().min(1),
  export_id: z.string().min(1),
});
export type ExportJob = z.infer<typeof ExportJobSchema>;
