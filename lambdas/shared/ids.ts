import { randomBytes } from 'node:crypto';
import { customAlphabet } from 'nanoid';

// 20 characters of 36 ≈ 103 bits: random, URL-safe, and lowercase so IDs read back unambiguously.
const suffix = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 20);

export type IdPrefix = 'acc' | 'wks' | 'flt' | 'dev' | 'key' | 'idn' | 'int';

/** A new random ID with its type prefix, e.g. `dev-3k9…`. */
export const newId = (prefix: IdPrefix): string => `${prefix}-${suffix()}`;

/** A new API key secret: 256 random bits, base64url, with a recognisable prefix. */
export const newApiKeySecret = (): string => `fsk_${randomBytes(32).toString('base64url')}`;

/** The current time as the interface writes dates (RFC 3339 UTC, milliseconds). */
export const nowIso = (): string => new Date().toISOString();
