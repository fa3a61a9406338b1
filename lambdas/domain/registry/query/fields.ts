import { TAG_KEY_MAX } from '../../../schemas/tags';

/**
 * The fields a query may name, and the values each takes. A field's type decides which values and
 * operators a clause may use on it (checked when parsing, so a query that parses means something).
 */
export type FieldType = 'string' | 'boolean' | 'date' | 'json';

/** The device's own fields, by name. */
export const BASE_FIELDS: Readonly<Record<string, FieldType>> = {
  name: 'string',
  fleet_id: 'string',
  connected: 'boolean',
  firmware_version: 'string',
  last_seen_at: 'date',
  last_connected_at: 'date',
  created_at: 'date',
};

const isKeyChar = (c: string, extra: string) =>
  (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c === '_' || c === '-' || extra.includes(c);

/** Whether a tag key is 1–64 characters of `[A-Za-z0-9_.-]`. */
export const isTagKey = (key: string) => key.length >= 1 && key.length <= TAG_KEY_MAX && [...key].every((c) => isKeyChar(c, '.'));

/** Whether a key of a state path is 1–64 characters of `[A-Za-z0-9_-]` (the state's own key rule). */
const isStateKey = (key: string) => key.length >= 1 && key.length <= TAG_KEY_MAX && [...key].every((c) => isKeyChar(c, ''));

/** A field as the evaluator reads it: one of the device's own, a tag, or a path into its reported or desired state. */
export type FieldRef = { kind: 'base'; name: string } | { kind: 'tag'; key: string } | { kind: 'state'; side: 'reported' | 'desired'; path: string[] };

/** What a field name refers to, or a message saying why it is none. */
export const resolveField = (name: string): FieldRef | { error: string } => {
  if (Object.hasOwn(BASE_FIELDS, name)) return { kind: 'base', name };
  if (name.startsWith('tags.')) {
    const key = name.slice('tags.'.length);
    return isTagKey(key) ? { kind: 'tag', key } : { error: `\`${key}\` is not a tag key (1–${TAG_KEY_MAX} of A-Z a-z 0-9 _ . -)` };
  }
  for (const side of ['reported', 'desired'] as const) {
    const prefix = `state.${side}.`;
    if (!name.startsWith(prefix)) continue;
    const path = name.slice(prefix.length).split('.');
    return path.every(isStateKey) ? { kind: 'state', side, path } : { error: `\`${name}\` is not a state path (keys of A-Z a-z 0-9 _ - joined by .)` };
  }
  return { error: `unknown field \`${name}\`` };
};

/** The type of a resolved field. */
export const typeOf = (field: FieldRef): FieldType => (field.kind === 'base' ? BASE_FIELDS[field.name] : field.kind === 'tag' ? 'string' : 'json');

/** The fields, as an error message lists them. */
export const FIELD_LIST = `${Object.keys(BASE_FIELDS).join(', ')}, tags.<key>, state.reported.<key>, state.desired.<key>`;

/**
 * Whether a text is an RFC 3339 date-time (`2026-11-01T00:00:00Z`, `…T01:00:00.5+01:00`): what a
 * date field compares with. Checked by its parts, then by the calendar.
 */
export const isRfc3339 = (text: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59 && !Number.isNaN(Date.parse(text));
};
