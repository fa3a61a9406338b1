import * as z from 'zod';

/** Most tags a device holds, longest key and value (spec fleet-state.md §1; docs/limits.md). */
export const TAGS_MAX = 50;
export const TAG_KEY_MAX = 64;
export const TAG_VALUE_MAX = 256;
/** Longest `q` taken (characters). */
export const QUERY_TEXT_MAX = 2000;

const KEY_RULE = `Tag keys are 1–${TAG_KEY_MAX} characters of A-Z a-z 0-9 _ . -`;

const TagKeySchema = z
  .string()
  .min(1, KEY_RULE)
  .max(TAG_KEY_MAX, KEY_RULE)
  .regex(/^[A-Za-z0-9_.-]+$/, KEY_RULE);
const TagValueSchema = z.string().max(TAG_VALUE_MAX, `Tag values are at most ${TAG_VALUE_MAX} characters.`);
const keyError = { error: (issue: { code?: string }) => (issue.code === 'invalid_key' ? KEY_RULE : undefined) };

/** A device's tags: string → string, at most 50. */
export const TagsSchema = z
  .record(TagKeySchema, TagValueSchema, keyError)
  .refine((tags) => Object.keys(tags).length <= TAGS_MAX, `At most ${TAGS_MAX} tags.`)
  .meta({
    id: 'Tags',
    description: `A device’s tags (additive field): at most ${TAGS_MAX}, keys 1–${TAG_KEY_MAX} of [A-Za-z0-9_.-], values at most ${TAG_VALUE_MAX} characters`,
    example: { site: 'milan', model: 'v2' },
  });
export type Tags = z.infer<typeof TagsSchema>;

/** A change of tags (PATCH): each key set to a value, or removed with null; the others are kept. */
export const TagChangesSchema = z.record(TagKeySchema, TagValueSchema.nullable(), keyError).meta({
  id: 'TagChanges',
  description: `Tags merged into the device’s: a value sets the key, null removes it; at most ${TAGS_MAX} tags after the merge`,
  example: { site: 'rome', obsolete: null },
});
export type TagChanges = z.infer<typeof TagChangesSchema>;

/** `q`: a query of the language of docs/api.md (parsed by the registry; a malformed one is a 400 naming the character). */
export const QueryTextSchema = z
  .string()
  .max(QUERY_TEXT_MAX, `Must be at most ${QUERY_TEXT_MAX} characters.`)
  .meta({
    description:
      'Only the devices matching this query (docs/api.md: `field op value` clauses joined by AND), e.g. `tags.site = "milan" AND connected = true`. A malformed query is a 400 whose message names the character',
    examples: [
      'tags.site = "milan"',
      'tags.site = "milan" AND connected = true',
      'tags.model IN ("v1", "v2") AND NOT EXISTS tags.retired',
      'last_seen_at < "2026-11-01T00:00:00Z"',
      'firmware_version != "1.2.0" AND tags.floor >= 3',
    ],
  });
