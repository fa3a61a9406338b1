import * as z from 'zod';
import { DateSchema } from './common';

/** Largest desired or reported document, in bytes of its JSON (spec/fleet-state.md §3; docs/limits.md). */
export const STATE_DOCUMENT_MAX_BYTES = 16 * 1024;
/** Deepest nesting of a state document: the document itself is level 1, an object or array in it level 2, … */
export const STATE_DEPTH_MAX = 8;
/** Longest key of a state document (top level). */
export const STATE_KEY_MAX = 64;

/** A state key: 1–64 of `[A-Za-z0-9_-]`, not starting with `_` (`@`, `#` and `_` are the device protocol's prefixes). */
export const STATE_KEY_PATTERN = /^[A-Za-z0-9-][A-Za-z0-9_-]{0,63}$/;
export const STATE_KEY_RULE = `State keys are 1–${STATE_KEY_MAX} characters of A-Z a-z 0-9 _ -, not starting with _ (nor @ or #: the device protocol's prefixes)`;

const documentMeta = (side: string) =>
  `The ${side} state: a JSON object of at most ${STATE_DOCUMENT_MAX_BYTES} bytes, nesting at most ${STATE_DEPTH_MAX} deep; keys: ${STATE_KEY_RULE}`;

const StateKeySchema = z.string().regex(STATE_KEY_PATTERN, STATE_KEY_RULE);
const keyError = { error: (issue: { code?: string }) => (issue.code === 'invalid_key' ? `${STATE_KEY_RULE}.` : undefined) };

/** A stored side of the state: key → any JSON. */
export const StateDocumentSchema = z
  .record(StateKeySchema, z.unknown(), keyError)
  .meta({ id: 'StateDocument', description: documentMeta('desired or reported') });

/** A change of one side (a top-level merge): each value sets its key, null removes it. */
export const StateChangesSchema = z.record(StateKeySchema, z.unknown(), keyError).meta({
  id: 'StateChanges',
  description: `Keys merged into the side's document: a value sets the key, null removes it; the rules of a document apply to the change and to the document it leaves (${STATE_DOCUMENT_MAX_BYTES} bytes, ${STATE_DEPTH_MAX} deep, keys: ${STATE_KEY_RULE}); a break is a 400 naming the key`,
  example: { interval: 60, mode: 'eco', obsolete: null },
});
export type StateChanges = z.infer<typeof StateChangesSchema>;

const TimesSchema = z.record(z.string(), DateSchema).meta({ description: 'When each key was last set' });
const VersionSchema = z.number().int().min(0).meta({ description: 'Grows by one with every change of `desired`; 0 for a device never given a desired state' });

/** A device's state as the API answers it (spec/fleet-state.md §3). */
export const DeviceStateSchema = z
  .object({
    desired: StateDocumentSchema,
    reported: StateDocumentSchema,
    delta: StateDocumentSchema.meta({ description: 'Every desired key whose value is not deep-equal to the reported one' }),
    version: VersionSchema,
    desired_at: TimesSchema,
    reported_at: TimesSchema,
  })
  .meta({ id: 'DeviceState' });
export type DeviceState = z.infer<typeof DeviceStateSchema>;

export const DeviceStateResponseSchema = z.object({ state: DeviceStateSchema });

/** `PATCH /workspaces/{ws}/devices/{id}/state`: desired keys merged, with the version the caller read (409 when stale). */
export const PatchDeviceStateBodySchema = z
  .strictObject({
    desired: StateChangesSchema,
    version: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ description: 'The version the change was made from: when it is not the current one, 409 and nothing is written' }),
  })
  .meta({ id: 'PatchDeviceState' });
export type PatchDeviceStateBody = z.infer<typeof PatchDeviceStateBodySchema>;

/** `POST /device/state`: the device reports its state (a top-level merge). */
export const ReportDeviceStateBodySchema = z.strictObject({ reported: StateChangesSchema }).meta({ id: 'ReportDeviceState' });
export type ReportDeviceStateBody = z.infer<typeof ReportDeviceStateBodySchema>;

/** The device's view of its state (`GET`/`POST /device/state`). */
export const DeviceSideStateSchema = DeviceStateSchema.pick({ desired: true, reported: true, delta: true, version: true }).meta({ id: 'DeviceSideState' });
export const DeviceSideStateResponseSchema = z.object({ state: DeviceSideStateSchema });

/** What `GET /device/status` adds: the desired state and its version. */
export const StatusStateSchema = DeviceStateSchema.pick({ desired: true, version: true }).meta({ id: 'StatusState' });
