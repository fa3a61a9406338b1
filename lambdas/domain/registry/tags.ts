import { ValidationError } from '../../shared/errors';
import type { TagChanges } from '../../schemas/tags';
import { TAGS_MAX } from '../../schemas/tags';

/**
 * A device's tags after a PATCH's changes: each value sets its key, each null removes it, the
 * other tags stay.
 * @throws ValidationError naming `body.tags` when more than 50 tags would be left.
 */
export const mergeTags = (current: Record<string, string> = {}, changes: TagChanges): Record<string, string> => {
  const merged: Record<string, string> = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const count = Object.keys(merged).length;
  if (count > TAGS_MAX) {
    throw new ValidationError('Invalid body: body.tags.', {
      details: [{ field: 'body.tags', message: `At most ${TAGS_MAX} tags: the change would leave the device ${count}.` }],
    });
  }
  return merged;
};
