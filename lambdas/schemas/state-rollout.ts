import * as z from 'zod';
import { DeviceIdSchema, RolloutIdSchema, WorkspaceIdRefSchema } from './common';
import { RolloutSettingsInputSchema } from './rollout-settings';
import { STATE_DEPTH_MAX, STATE_DOCUMENT_MAX_BYTES, STATE_KEY_PATTERN, STATE_KEY_RULE } from './state';

/**
 * A fleet-wide desired document: at least one top-level key, each set to any JSON value or to null
 * (removed from each device's desired state). Its keys follow the state key rule here (so the
 * OpenAPI document says it); the document rules (16 KB, 8 levels) are checked by
 * domain/state/document.ts; a bad key is named `body.desired.<key>`.
 */
export const FleetDesiredSchema = z
  .record(z.string().regex(STATE_KEY_PATTERN, STATE_KEY_RULE), z.unknown(), {
    error: (issue: { code?: string }) => (issue.code === 'invalid_key' ? `${STATE_KEY_RULE}.` : undefined),
  })
  .refine((desired) => Object.keys(desired).length > 0, 'Give at least one key.')
  .meta({
    id: 'FleetDesired',
    description: `The desired keys to set on every targeted device (a top-level merge; null removes a key), at least one: a JSON object of at most ${STATE_DOCUMENT_MAX_BYTES} bytes, nesting at most ${STATE_DEPTH_MAX} deep; keys: ${STATE_KEY_RULE}`,
    example: { interval: 60, mode: 'eco' },
  });

export const FleetStatePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema });

export const ChangeFleetStateBodySchema = z
  .strictObject({ desired: FleetDesiredSchema, rollout: RolloutSettingsInputSchema.optional() })
  .meta({ id: 'ChangeFleetState' });

export const StateChangeResponseSchema = z
  .object({
    state_change: z.object({
      rollout_id: RolloutIdSchema.meta({
        description: 'The rollout (kind state) that records the change: its counts say who applied it (done) and who has not (pending)',
      }),
      devices: z.array(DeviceIdSchema).meta({ description: 'The targeted devices, released (pending or done) or queued' }),
    }),
  })
  .meta({ id: 'StateChangeResponse' });
