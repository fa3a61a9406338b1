import { randomBytes } from 'node:crypto';
import { customAlphabet } from 'nanoid';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
// 9 base-36 digits hold every millisecond until the year 5188, so they compare as the times do.
const TIME_DIGITS = 9;
// The other 11 characters are random: ≈ 57 bits, fresh for every ID of the same millisecond.
const random = customAlphabet(ALPHABET, 20 - TIME_DIGITS);

export type IdPrefix = 'acc' | 'wks' | 'flt' | 'dev' | 'key' | 'idn' | 'int' | 'exp' | 'rol' | 'fwr' | 'grp' | 'alr' | 'alm';

/**
 * A new ID with its type prefix, e.g. `dev-mhx2k0q8a3k9v2m7q1x8c`: 20 lowercase letters or digits,
 * the creation time (milliseconds, base 36) then random ones. IDs made this way sort as their items
 * were created, so a collection read in key order (the registry's `FLT#<id>`, `DEV#<id>`, …) is
 * oldest first, and a list can stream page by page in that order without sorting. Give the
 * `created_at` the item gets, so that its ID and its date cannot disagree.
 */
export const newId = (prefix: IdPrefix, createdAt: string = nowIso()): string =>
  `${prefix}-${Date.parse(createdAt).toString(36).padStart(TIME_DIGITS, '0')}${random()}`;

/** A new API key secret: 256 random bits, base64url, with a recognisable prefix. */
export const newApiKeySecret = (): string => `fsk_${randomBytes(32).toString('base64url')}`;

/** The current time as the interface writes dates (RFC 3339 UTC, milliseconds). */
export const nowIso = (): string => new Date().toISOString();
