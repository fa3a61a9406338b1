import type { Alarm, AlarmKind, AlarmRule, AlarmRuleInput, AlarmSeverity, Device } from './api';
import { ApiError } from './errors';
import { positionOf, type QueryProblem } from './find';

/** Severities, the gravest first: the Alarms page sorts by this order. */
export const SEVERITIES: readonly AlarmSeverity[] = ['critical', 'major', 'minor', 'warning'];
export const ALARM_KINDS: readonly AlarmKind[] = ['condition', 'offline', 'silent', 'threshold'];
export const THRESHOLD_OPS = ['>', '>=', '<', '<='] as const;

/** Shortest `for_seconds` of the kinds the minute sweep watches (`offline`, `silent`), and the longest of any. */
export const FOR_SECONDS_MIN_TIMED = 60;
export const FOR_SECONDS_MAX = 86_400;

const STATUS_RANK: Record<Alarm['status'], number> = { open: 0, acknowledged: 1, closed: 2 };

/**
 * The Alarms page's order: open alarms first, then acknowledged, then closed; within each, the
 * gravest severity first, then the newest.
 */
export const sortAlarms = (alarms: readonly Alarm[]): Alarm[] =>
  [...alarms].sort(
    (a, b) =>
      STATUS_RANK[a.status] - STATUS_RANK[b.status] ||
      SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) ||
      b.opened_at.localeCompare(a.opened_at) ||
      b.id.localeCompare(a.id),
  );

/** Replaces (or adds) alarms by ID in a list, keeping the page's order: an acknowledged alarm in place. */
export const withAlarm = (alarms: readonly Alarm[], changed: Alarm): Alarm[] =>
  alarms.some((a) => a.id === changed.id) ? alarms.map((a) => (a.id === changed.id ? changed : a)) : [...alarms, changed];

const value = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** What an alarm's details say, in words (what opened it, then what closed it). */
export const alarmDetailsText = (alarm: Pick<Alarm, 'kind' | 'details'>, format: (iso: string) => string = (iso) => iso): string => {
  const d = alarm.details ?? {};
  const parts: string[] = [];
  const time = (k: string) => (typeof d[k] === 'string' ? format(d[k] as string) : undefined);
  if (d.value !== undefined) parts.push(`value ${value(d.value)}${d.field ? ` of ${value(d.field)}` : ''}`);
  if (time('disconnected_at')) parts.push(`disconnected at ${time('disconnected_at')}`);
  if (time('last_seen_at')) parts.push(`last data at ${time('last_seen_at')}`);
  if (d.condition_uuid !== undefined) parts.push(`condition ${value(d.condition_uuid)}${time('start') ? ` opened at ${time('start')}` : ''}`);
  if (time('connected_at')) parts.push(`connected again at ${time('connected_at')}`);
  if (time('seen_at')) parts.push(`data again at ${time('seen_at')}`);
  if (d.closed_by === 'rule_disabled') parts.push('closed: its rule was disabled');
  else if (d.closed_by === 'rule_deleted') parts.push('closed: its rule was deleted');
  else if (d.closed_by === 'device_deleted') parts.push('closed: its device was deleted');
  else if (d.closed_by !== undefined) parts.push(`closed by ${value(d.closed_by)}`);
  const known = new Set(['value', 'field', 'disconnected_at', 'last_seen_at', 'condition_uuid', 'start', 'connected_at', 'seen_at', 'closed_by']);
  for (const [k, v] of Object.entries(d)) if (!known.has(k)) parts.push(`${k.replace(/_/g, ' ')} ${value(v)}`);
  return parts.join('; ') || '—';
};

/** The fields each kind of rule takes beyond those of every rule (name, severity, target, for_seconds, notify). */
export const KIND_FIELDS: Record<AlarmKind, ReadonlyArray<'tag' | 'field' | 'op' | 'value' | 'clear_value'>> = {
  condition: ['tag'],
  offline: [],
  silent: ['tag'],
  threshold: ['tag', 'field', 'op', 'value', 'clear_value'],
};

/** The shortest `for_seconds` a kind takes. */
export const forSecondsMin = (kind: AlarmKind) => (kind === 'offline' || kind === 'silent' ? FOR_SECONDS_MIN_TIMED : 0);

/** What a kind's `for_seconds` means and its bounds, in words (the editor's hint). */
export const forSecondsHint = (kind: AlarmKind) =>
  kind === 'offline' || kind === 'silent'
    ? `At least ${FOR_SECONDS_MIN_TIMED} s (a sweep looks once a minute), at most ${FOR_SECONDS_MAX.toLocaleString('en-US')} (a day).`
    : `0 (at once) to ${FOR_SECONDS_MAX.toLocaleString('en-US')} (a day).`;

/** The rule editor's fields as typed. */
export interface RuleForm {
  name: string;
  kind: AlarmKind;
  severity: AlarmSeverity;
  tag: string;
  field: string;
  op: (typeof THRESHOLD_OPS)[number];
  value: string;
  clearValue: string;
  forSeconds: string;
  emails: string;
  integrations: boolean;
  fleets: string[];
  group: string;
  q: string;
  enabled: boolean;
}

export const emptyRuleForm = (): RuleForm => ({
  name: '',
  kind: 'offline',
  severity: 'major',
  tag: '',
  field: '',
  op: '>',
  value: '',
  clearValue: '',
  forSeconds: '300',
  emails: '',
  integrations: true,
  fleets: [],
  group: '',
  q: '',
  enabled: true,
});

/** A rule as the editor shows it. */
export const ruleFormOf = (rule: AlarmRule): RuleForm => ({
  name: rule.name,
  kind: rule.kind,
  severity: rule.severity,
  tag: rule.tag ?? '',
  field: rule.field ?? '',
  op: rule.op ?? '>',
  value: rule.value === null ? '' : String(rule.value),
  clearValue: rule.clear_value === null ? '' : String(rule.clear_value),
  forSeconds: String(rule.for_seconds),
  emails: rule.notify.emails.join(', '),
  integrations: rule.notify.integrations,
  fleets: [...rule.target.fleets],
  group: rule.target.group ?? '',
  q: rule.target.q ?? '',
  enabled: rule.enabled,
});

/** A number as typed: a number, or the text itself (the API then says what is wrong with it). */
const numberOf = (text: string): number | string => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text);

/**
 * The body of a create (every field the kind takes, no other) or of a change (`editing`: the
 * fields of another kind cleared with null, so a rule keeps none it does not take).
 */
export const ruleBody = (form: RuleForm, editing = false): AlarmRuleInput => {
  const takes = new Set(KIND_FIELDS[form.kind]);
  const optional = <T>(name: 'tag' | 'field' | 'op' | 'value' | 'clear_value', v: T | undefined) =>
    takes.has(name) && v !== undefined && v !== '' ? { [name]: v } : editing ? { [name]: null } : {};
  const target = {
    ...(form.fleets.length ? { fleets: form.fleets } : {}),
    ...(form.group ? { group: form.group } : {}),
    ...(form.q.trim() ? { q: form.q.trim() } : {}),
  };
  return {
    name: form.name.trim(),
    ...(editing ? {} : { kind: form.kind }),
    severity: form.severity,
    ...(Object.keys(target).length ? { target } : editing ? { target: null } : {}),
    ...optional('tag', form.tag.trim()),
    ...optional('field', form.field.trim()),
    ...optional('op', form.op),
    ...optional('value', form.value.trim() === '' ? undefined : numberOf(form.value)),
    ...optional('clear_value', form.clearValue.trim() === '' ? undefined : numberOf(form.clearValue)),
    for_seconds: numberOf(form.forSeconds) as number,
    notify: {
      emails: form.emails
        .split(/[\s,;]+/)
        .map((e) => e.trim())
        .filter(Boolean),
      integrations: form.integrations,
    },
    enabled: form.enabled,
  } as AlarmRuleInput;
};

/**
 * A 400's problems by the editor's field (`for_seconds`, `tag`, `notify.emails`, `target.fleets`…):
 * the first message of each, so that it shows next to its field. `target.q` is the query box's.
 */
export const ruleFieldErrors = (error: unknown): Record<string, string> => {
  if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 404)) return {};
  const errors: Record<string, string> = {};
  for (const d of error.details) {
    const field = d.field
      .replace(/^body\./, '')
      .replace(/^notify\.emails\.\d+$/, 'notify.emails')
      .replace(/^target\.fleets\.\d+$/, 'target.fleets');
    errors[field] ??= d.message;
  }
  return errors;
};

/** The problem of the rule's query (`body.target.q`), with the character it names. */
export const ruleQueryProblem = (error: unknown): QueryProblem | undefined => {
  const message = ruleFieldErrors(error)['target.q'];
  if (message === undefined) return undefined;
  const index = positionOf(message);
  return index === undefined ? { message } : { message, index };
};

/** How many names the preview lists. */
export const PREVIEW_NAMES = 5;

/**
 * The devices a rule's target reaches now, from the devices search (its fleets and query) and,
 * when it names a group, the group's devices (its parts AND together): how many, and the first
 * names (by name).
 */
export const previewOf = (searched: readonly Pick<Device, 'id' | 'name'>[], groupDevices?: readonly Pick<Device, 'id'>[]) => {
  const inGroup = groupDevices ? new Set(groupDevices.map((d) => d.id)) : undefined;
  const devices = inGroup ? searched.filter((d) => inGroup.has(d.id)) : [...searched];
  const names = devices
    .map((d) => d.name)
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' }))
    .slice(0, PREVIEW_NAMES);
  return { count: devices.length, names };
};

/** The navigation's count: "3", "99+" past what one page read. */
export const countText = (count: number, more: boolean) => (more ? `${count}+` : String(count));
