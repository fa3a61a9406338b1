/** The result of reading a JSON object typed by a person: the value, or what is wrong and where. */
export type JsonObjectInput = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** Largest job value, as the API's JOB_VALUE_MAX_BYTES (32 KB serialized). */
export const JOB_VALUE_MAX_BYTES = 32 * 1024;

/** Where in the text a JSON.parse error points, as "line L, column C" (engines say "position N"). */
const positionOf = (text: string, message: string) => {
  const match = /position (\d+)/.exec(message);
  if (!match) return '';
  const before = text.slice(0, Number(match[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return ` (line ${line}, column ${column})`;
};

/** Reads a job value: a JSON object (not an array, a string or null), at most 32 KB. Empty text is `{}`. */
export const parseJsonObject = (text: string, maxBytes = JOB_VALUE_MAX_BYTES): JsonObjectInput => {
  if (!text.trim()) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    return { ok: false, error: `Not valid JSON${positionOf(text, message)}: ${message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      error: `The value must be a JSON object such as {"key": "value"}, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}.`,
    };
  }
  const bytes = new TextEncoder().encode(JSON.stringify(value)).length;
  if (bytes > maxBytes) return { ok: false, error: `The value is ${bytes} bytes as JSON; at most ${maxBytes} are allowed.` };
  return { ok: true, value: value as Record<string, unknown> };
};

/** Reads a comma- or space-separated list (tags, fleet IDs): trimmed, without empty or repeated entries. */
export const parseList = (text: string): string[] => [
  ...new Set(
    text
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean),
  ),
];

/** A datetime-local input's value (local time, no zone) as RFC 3339 UTC; undefined when empty or invalid. */
export const localInputToIso = (value: string): string | undefined => {
  if (!value) return undefined;
  const time = new Date(value).getTime();
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
};

/** An instant as a datetime-local input's value (local time, minutes). */
export const isoToLocalInput = (time: number): string => {
  const d = new Date(time);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};
