// A namespace import lets esbuild drop the parts of zod a handler does not use (454 KB → 85 KB).
import * as z from 'zod';
import { JSON_MAX_DEPTH, JSON_RULES, valueNesting } from '../shared/json';

/** Limits of names and descriptions (DESIGN §7). */
export const NAME_MAX = 128;
export const DESCRIPTION_MAX = 1024;

/** Longest ID a request may name (path, query or body); ours are 24 characters. */
export const ID_MAX = 64;

/**
 * An ID as the service generates it: a random, URL-safe suffix after its type prefix (`wks-…`).
 * Used for what the service answers; requests name IDs by {@link idRefSchema}.
 */
export const idSchema = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}-[0-9a-z]{20}$`), `Must be an ID of the form ${prefix}-<20 lowercase letters or digits>.`);

/**
 * An ID as a request names it (path parameter, `fleet`/`device` query value, `fleet_id` body
 * field): any 1 to 64 letters, digits, "_" or "-" (DESIGN §7). A well-formed ID that is not one
 * of ours, such as the reference's `wks-123456789`, is answered 404 by the lookup, like any
 * unknown ID; only what cannot be an ID at all (empty, too long, other characters, which could
 * never name an item) is a 400. The characters exclude "#", the registry keys' separator.
 */
export const idRefSchema = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^[A-Za-z0-9_-]{1,${ID_MAX}}$`), `Must be an ID: 1 to ${ID_MAX} letters, digits, "_" or "-".`)
    .meta({ description: `A ${prefix}-… ID (1 to ${ID_MAX} letters, digits, "_" or "-")`, example: `${prefix}-3k9v2m7q1x8c4n6b5z0a` });

export const AccountIdSchema = idSchema('acc');
export const WorkspaceIdSchema = idSchema('wks');
export const FleetIdSchema = idSchema('flt');
export const DeviceIdSchema = idSchema('dev');
export const ApiKeyIdSchema = idSchema('key');
export const RolloutIdSchema = idSchema('rol');

/** IDs as requests name them (see {@link idRefSchema}). */
export const WorkspaceIdRefSchema = idRefSchema('wks');
export const FleetIdRefSchema = idRefSchema('flt');
export const DeviceIdRefSchema = idRefSchema('dev');
export const ApiKeyIdRefSchema = idRefSchema('key');
export const IdentityIdRefSchema = idRefSchema('idn');
export const IntegrationIdRefSchema = idRefSchema('int');
export const RolloutIdRefSchema = idRefSchema('rol');

// Checked as sent, then trimmed: the length and the "not blank" rule are what JSON Schema can say
// (maxLength, pattern), so the OpenAPI document refuses exactly what this refuses.
export const NameSchema = z
  .string()
  .max(NAME_MAX, `Must be at most ${NAME_MAX} characters.`)
  .regex(/\S/, 'Must not be empty.')
  .trim()
  .meta({ description: `1 to ${NAME_MAX} characters, not blank; stored trimmed` });

export const DescriptionSchema = z
  .string()
  .max(DESCRIPTION_MAX, `Must be at most ${DESCRIPTION_MAX} characters.`)
  .meta({ description: `At most ${DESCRIPTION_MAX} characters` });

/** Names used in paths: job names, firmware IDs and versions. */
export const TokenSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'Must be 1 to 64 characters among letters, digits, "_", "." and "-".');

/**
 * A token that is a path segment (job names, firmware IDs and versions): "." and ".." are refused,
 * since every URL parser resolves them as steps, so a job of that name could never be reached.
 */
export const PathTokenSchema = z
  .string()
  .regex(
    /^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}|\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,62}|\.\.[A-Za-z0-9_.-]{1,62})$/,
    'Must be 1 to 64 characters among letters, digits, "_", "." and "-", and not "." or "..".',
  );

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
