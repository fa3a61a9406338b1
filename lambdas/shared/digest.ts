/**
 * FNV-1a (32-bit) digests: stable across runtimes and cheap, for spreading keys and telling
 * values apart, never for secrecy.
 */
export const fnv1a = (text: string, seed = 0x811c9dc5): number => {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
};

/** 8 hex digits of a text's digest. */
export const digest8 = (text: string) => fnv1a(text).toString(16).padStart(8, '0');

/** 16 hex digits: two digests with different seeds, for identities that must not collide by chance. */
export const digest16 = (text: string) => `${digest8(text)}${fnv1a(text, 0x01000193).toString(16).padStart(8, '0')}`;
