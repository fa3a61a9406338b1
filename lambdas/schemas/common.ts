// A namespace import lets esbuild drop the parts of zod a handler does not use (454 KB → 85 KB).
import * as z from 'zod';
import { JSON_MAX_DEPTH, JSON_RULES, valueNesting } from '../shared/json';

/** Limits of names and descriptions (DESIGN §7). */
export const NAME_MAX = 128;
export const DESCRIPTION_MAX = 1024;

/** A random, URL-safe ID with its type prefix (`wks-…`). */
export const idSchema = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}-[0-9a-z]{20}$`), `Must be an ID of the form ${prefix}-<20 lowercase letters or digits>.`);

export const AccountIdSchema = idSchema('acc');
export const WorkspaceIdSchema = idSchema('wks');
export const FleetIdSchema = idSchema('flt');
export const DeviceIdSchema = idSchema('dev');
export const ApiKeyIdSchema = idSchema('key');

export const NameSchema = z
  .string()
  .trim()
  .min(1, 'Must not be empty.')
  .max(NAME_MAX, `Must be at most ${NAME_MAX} characters.`)
  .meta({ description: `1 to ${NAME_MAX} characters` });

export const DescriptionSchema = z
  .string()
  .max(DESCRIPTION_MAX, `Must be at most ${DESCRIPTION_MAX} characters.`)
  .meta({ description: `At most ${DESCRIPTION_MAX} characters` });

/** Names used in paths: job names, firmware IDs and versions. */
export const TokenSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'Must be 1 to 64 characters among letters, digits, "_", "." and "-".');

/** RFC 3339 UTC with milliseconds, as every date of the interface. */
export const DateSchema = z.iso.datetime().meta({ description: 'RFC 3339 date (UTC)', example: '2021-07-08T14:21:15.915Z' });

/** Whether a JSON value nests at most JSON_MAX_DEPTH levels of objects and arrays. */
export const isWithinJsonDepth = (value: unknown) => valueNesting(value, JSON_MAX_DEPTH) <= JSON_MAX_DEPTH;

/**
 * A JSON object of free form: any keys (the empty one too), any JSON values, nested at most
 * JSON_MAX_DEPTH levels. It is stored as JSON text, so it comes back exactly as given.
 */
export const JsonObjectSchema = z
  .record(z.string(), z.unknown())
  .refine(isWithinJsonDepth, JSON_RULES.depth(JSON_MAX_DEPTH))
  .meta({ description: `A JSON object, nested at most ${JSON_MAX_DEPTH} levels` });
