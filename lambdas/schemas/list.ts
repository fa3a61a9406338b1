import * as z from 'zod';

/** Most items one page of a list holds (`limit`). */
export const LIST_LIMIT_MAX = 1000;
/** Longest cursor a request may send; ours are far shorter. */
export const CURSOR_MAX = 512;

/**
 * The optional paging parameters of every list route. Without them a list answers every item, as
 * the interface defines it; with them it answers a page and the cursor of the next one.
 */
export const PageQueryShape = {
  limit: z
    .string()
    .regex(/^\d{1,6}$/, `Must be an integer from 1 to ${LIST_LIMIT_MAX}.`)
    .transform(Number)
    .pipe(z.number().min(1, 'Must be at least 1.').max(LIST_LIMIT_MAX, `Must be at most ${LIST_LIMIT_MAX}.`))
    .optional()
    // The document says what a client sends: an integer within the bounds (the pattern is dropped).
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: LIST_LIMIT_MAX,
      description: `Integer from 1 to ${LIST_LIMIT_MAX}: answer a page of at most this many items, with \`next\`. Omitted (and no cursor): every item, without \`next\``,
    }),
  cursor: z
    .string()
    .regex(new RegExp(`^[A-Za-z0-9_-]{1,${CURSOR_MAX}}$`), 'Must be the `next` of a page of this list.')
    .optional()
    .meta({
      description:
        'The `next` of the previous page of this same list (same path, same caller); opaque. A cursor of another list, workspace, device or account is a 400',
    }),
};

/** Paging parameters as parsed. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

/** The additive field of a paged list's answer. */
export const NextSchema = z.string().nullable().optional().meta({
  description:
    'Only when the request had `limit` or `cursor`: the cursor of the next page, or null when this page is the last. Never present in an unpaged answer',
});

/** The query of a list route that takes nothing but paging. */
export const PageQuerySchema = z.strictObject(PageQueryShape);
