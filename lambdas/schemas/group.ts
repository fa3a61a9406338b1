import * as z from 'zod';
import { DateSchema, idRefSchema, idSchema, NameSchema, WorkspaceIdRefSchema } from './common';
import { NextSchema } from './list';
import { QUERY_TEXT_MAX } from './tags';

/** Longest query a group may save, in characters: as long as the device list's `q`. */
export const GROUP_QUERY_MAX = QUERY_TEXT_MAX;

export const GroupIdSchema = idSchema('grp');
export const GroupIdRefSchema = idRefSchema('grp');

/**
 * A query as a group saves it: the text as given (parsed by the query language of
 * spec/fleet-state.md §1 before it is stored; a malformed one is a 400 naming where). Required and
 * not blank: a group of every device is the device list itself.
 */
export const GroupQuerySchema = z
  .string()
  .max(GROUP_QUERY_MAX, `Must be at most ${GROUP_QUERY_MAX} characters.`)
  .regex(/\S/, 'Must not be empty.')
  .meta({
    description: `A query of the device search language (1 to ${GROUP_QUERY_MAX} characters, not blank), e.g. \`tags.site = "milan" AND connected = true\`; stored as given`,
    example: 'tags.site = "milan" AND tags.model = "v2"',
  });

export const GroupSchema = z
  .object({
    id: GroupIdSchema,
    name: z.string(),
    query: z.string(),
    created_at: DateSchema,
    updated_at: DateSchema,
    used_by: z.array(z.string()).meta({
      description: 'The IDs of what targets the group and holds it (continuous rollouts, alarm rules): while any does, the group cannot be deleted (409)',
    }),
  })
  .meta({ id: 'Group' });
export type Group = z.infer<typeof GroupSchema>;

/** A group as `GET …/groups/{id}` answers it: with the number of devices its query matches now. */
export const GroupWithCountSchema = GroupSchema.extend({
  device_count: z.number().int().min(0).meta({ description: 'How many devices of the workspace match the query now (counted at the request)' }),
}).meta({ id: 'GroupWithCount' });

export const GroupPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, groupId: GroupIdRefSchema });

export const CreateGroupBodySchema = z.strictObject({ name: NameSchema, query: GroupQuerySchema }).meta({ id: 'CreateGroup' });
export type CreateGroupBody = z.infer<typeof CreateGroupBodySchema>;

export const UpdateGroupBodySchema = z
  .strictObject({ name: NameSchema.optional(), query: GroupQuerySchema.optional() })
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change.')
  .meta({ id: 'UpdateGroup', minProperties: 1 });
export type UpdateGroupBody = z.infer<typeof UpdateGroupBodySchema>;

export const GroupResponseSchema = z.object({ group: GroupSchema });
export const GroupWithCountResponseSchema = z.object({ group: GroupWithCountSchema });
export const GroupListResponseSchema = z.object({ groups: z.array(GroupSchema), next: NextSchema });
