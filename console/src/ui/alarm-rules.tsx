import { useState } from 'preact/hooks';
import {
  ALARM_KINDS,
  emptyRuleForm,
  forSecondsHint,
  KIND_FIELDS,
  previewOf,
  ruleBody,
  ruleFieldErrors,
  ruleFormOf,
  ruleQueryProblem,
  SEVERITIES,
  THRESHOLD_OPS,
  type RuleForm,
} from '../lib/alarms';
import type { AlarmKind, AlarmRule, AlarmSeverity, ApiClient } from '../lib/api';
import { labelOf, type Pickable } from '../lib/pickers';
import { Busy, ErrorBox, Name, useAction, useLoad, when } from './components';
import { useConfirm } from './confirm';
import { EntityPicker, pickedIds, usePickerState, type useWorkspaceItems } from './picker';
import { QueryField } from './query-box';

type Rules = ReturnType<typeof useLoad<AlarmRule[]>>;
type Items = ReturnType<typeof useWorkspaceItems>;

/** What a kind watches, in words. */
const KIND_WORDS: Record<AlarmKind, string> = {
  condition: 'a condition open (with the tag) for the duration',
  offline: 'a device disconnected for the duration',
  silent: 'no data point (on the tag) for the duration',
  threshold: 'every point on the tag past the value for the duration, until one past the clearing value',
};

/** The message of one field's 400, next to the field. */
const FieldError = ({ errors, field }: { errors: Record<string, string>; field: string }) =>
  errors[field] ? (
    <small class="error field-error" role="alert" id={`rule-error-${field.replace(/\./g, '-')}`} data-testid={`rule-error-${field}`}>
      {errors[field]}
    </small>
  ) : null;

/** The rule editor: the fields the kind takes, targets by name, a preview of the devices it reaches, the API's 400 at its field. */
const RuleEditor = ({
  api,
  workspaceId,
  items,
  groups,
  editing,
  onSaved,
  onCancel,
}: {
  api: ApiClient;
  workspaceId: string;
  items: Items;
  groups: readonly Pickable[] | undefined;
  editing?: AlarmRule;
  onSaved: (rule: AlarmRule) => void;
  onCancel: () => void;
}) => {
  const [form, setForm] = useState<RuleForm>(() => (editing ? ruleFormOf(editing) : emptyRuleForm()));
  const fleets = usePickerState(editing?.target.fleets ?? []);
  const group = usePickerState(editing?.target.group ? [editing.target.group] : []);
  const save = useAction();
  const preview = useAction();
  const [shown, setShown] = useState<{ count: number; names: string[] } | undefined>(undefined);
  const set = <K extends keyof RuleForm>(key: K, value: RuleForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const takes = new Set(KIND_FIELDS[form.kind]);
  const current = (): RuleForm => ({ ...form, fleets: pickedIds(fleets, items.fleets), group: pickedIds(group, groups)[0] ?? '' });
  const errors = ruleFieldErrors(save.error ?? preview.error);
  const problem = ruleQueryProblem(save.error) ?? ruleQueryProblem(preview.error);
  const invalid = (field: string) => Boolean(errors[field]);

  const runPreview = async () => {
    const f = current();
    setShown(undefined);
    const found = await preview.run(async () => {
      const [searched, inGroup] = await Promise.all([
        api.listDevices(workspaceId, f.fleets.length ? f.fleets : undefined, f.q.trim() || undefined),
        f.group ? api.listGroupDevices(workspaceId, f.group) : Promise.resolve(undefined),
      ]);
      return previewOf(searched, inGroup);
    });
    if (found) setShown(found);
  };

  return (
    <form
      class="rule-editor"
      aria-label={editing ? `Edit the rule ${editing.name}` : 'New alarm rule'}
      onSubmit={async (e) => {
        e.preventDefault();
        const body = ruleBody(current(), Boolean(editing));
        const saved = await save.run(() => (editing ? api.updateAlarmRule(workspaceId, editing.id, body) : api.createAlarmRule(workspaceId, body)));
        if (saved) onSaved(saved);
      }}
    >
      <h4>{editing ? `Edit “${editing.name}”` : 'New alarm rule'}</h4>
      <label class="field">
        <span>Name</span>
        <input name="rule-name" required maxLength={128} value={form.name} aria-invalid={invalid('name')} onInput={(e) => set('name', e.currentTarget.value)} />
        <FieldError errors={errors} field="name" />
      </label>
      <label class="field">
        <span>Kind</span>
        <select name="rule-kind" value={form.kind} disabled={Boolean(editing)} onChange={(e) => set('kind', e.currentTarget.value as AlarmKind)}>
          {ALARM_KINDS.map((k) => (
            <option value={k}>{k}</option>
          ))}
        </select>
        <small>
          Opens on {KIND_WORDS[form.kind]}.{editing ? ' A rule’s kind is fixed once created.' : ''}
        </small>
      </label>
      <label class="field">
        <span>Severity</span>
        <select name="rule-severity" value={form.severity} onChange={(e) => set('severity', e.currentTarget.value as AlarmSeverity)}>
          {SEVERITIES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
        <FieldError errors={errors} field="severity" />
      </label>
      {takes.has('tag') && (
        <label class="field">
          <span>Tag</span>
          <input name="rule-tag" value={form.tag} aria-invalid={invalid('tag')} onInput={(e) => set('tag', e.currentTarget.value)} />
          <small>{form.kind === 'threshold' ? 'The data tag whose points are compared.' : 'Empty: any tag.'}</small>
          <FieldError errors={errors} field="tag" />
        </label>
      )}
      {takes.has('field') && (
        <>
          <label class="field">
            <span>Field</span>
            <input
              name="rule-field"
              placeholder="temp, env.temp"
              value={form.field}
              aria-invalid={invalid('field')}
              onInput={(e) => set('field', e.currentTarget.value)}
            />
            <FieldError errors={errors} field="field" />
          </label>
          <label class="field">
            <span>Comparison</span>
            <select name="rule-op" value={form.op} onChange={(e) => set('op', e.currentTarget.value as RuleForm['op'])}>
              {THRESHOLD_OPS.map((op) => (
                <option value={op}>{op}</option>
              ))}
            </select>
            <FieldError errors={errors} field="op" />
          </label>
          <label class="field">
            <span>Value</span>
            <input
              name="rule-value"
              inputMode="decimal"
              value={form.value}
              aria-invalid={invalid('value')}
              onInput={(e) => set('value', e.currentTarget.value)}
            />
            <FieldError errors={errors} field="value" />
          </label>
          <label class="field">
            <span>Clearing value</span>
            <input
              name="rule-clear-value"
              inputMode="decimal"
              value={form.clearValue}
              aria-invalid={invalid('clear_value')}
              onInput={(e) => set('clearValue', e.currentTarget.value)}
            />
            <small>Empty: the value. The alarm closes at a point on the other side of it, so a value hovering at the threshold does not flap.</small>
            <FieldError errors={errors} field="clear_value" />
          </label>
        </>
      )}
      <label class="field">
        <span>For (seconds)</span>
        <input
          name="rule-for-seconds"
          inputMode="numeric"
          value={form.forSeconds}
          aria-invalid={invalid('for_seconds')}
          aria-describedby={errors.for_seconds ? 'rule-error-for_seconds' : undefined}
          onInput={(e) => set('forSeconds', e.currentTarget.value)}
        />
        <small>How long it must hold before an alarm opens. {forSecondsHint(form.kind)}</small>
        <FieldError errors={errors} field="for_seconds" />
      </label>
      <fieldset>
        <legend>Devices watched (its parts together; none: every device)</legend>
        <EntityPicker label="Fleets" name="rule-fleets" hint="Type part of a fleet’s name" items={items.fleets} state={fleets} multiple />
        <FieldError errors={errors} field="target.fleets" />
        <EntityPicker label="Group" name="rule-group" hint="Type part of a group’s name" items={groups} state={group} />
        <FieldError errors={errors} field="target.group" />
        <QueryField
          name="rule-q"
          label="Devices that match"
          value={form.q}
          onInput={(text) => {
            set('q', text);
            save.setError(undefined);
            preview.setError(undefined);
          }}
          problem={problem}
          problemQuery={form.q}
        />
        <button type="button" disabled={preview.busy} onClick={() => void runPreview()}>
          Preview the devices
        </button>
        {preview.busy && <Busy label="Finding the devices…" />}
        {preview.error && !problem ? <ErrorBox error={preview.error} /> : null}
        {shown && (
          <p data-testid="rule-preview" data-count={shown.count}>
            {shown.count === 1 ? '1 device' : `${shown.count.toLocaleString('en-US')} devices`} now
            {shown.names.length ? `: ${shown.names.join(', ')}${shown.count > shown.names.length ? ', …' : ''}` : '.'}
          </p>
        )}
      </fieldset>
      <label class="field">
        <span>E-mail on open and close</span>
        <input
          name="rule-emails"
          placeholder="ops@example.com, …"
          value={form.emails}
          aria-invalid={invalid('notify.emails')}
          onInput={(e) => set('emails', e.currentTarget.value)}
        />
        <small>Up to 20 addresses, separated by commas.</small>
        <FieldError errors={errors} field="notify.emails" />
      </label>
      <label>
        <input type="checkbox" name="rule-integrations" checked={form.integrations} onChange={(e) => set('integrations', e.currentTarget.checked)} /> Tell the
        workspace’s integrations (an <code>alarm</code> event at each transition)
      </label>
      <label>
        <input type="checkbox" name="rule-enabled" checked={form.enabled} onChange={(e) => set('enabled', e.currentTarget.checked)} /> Enabled
      </label>
      {save.error && !Object.keys(errors).length ? <ErrorBox error={save.error} /> : null}
      {save.error && Object.keys(errors).length ? (
        <p class="error" role="alert">
          {(save.error as Error).message} See the fields marked.
        </p>
      ) : null}
      <div class="toolbar">
        <button type="submit" disabled={save.busy} aria-busy={save.busy}>
          {editing ? 'Save the rule' : 'Create the rule'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
};

/** A rule's target in words, by names. */
const targetText = (rule: AlarmRule, fleets: readonly Pickable[] | undefined, groups: readonly Pickable[] | undefined) => {
  const parts = [
    rule.target.fleets.length ? `fleets ${rule.target.fleets.map((f) => labelOf(f, fleets ?? [])).join(', ')}` : '',
    rule.target.group ? `group ${labelOf(rule.target.group, groups ?? [])}` : '',
    rule.target.q ? `matching ${rule.target.q}` : '',
  ].filter(Boolean);
  return parts.join(', and ') || 'every device';
};

/** The workspace's rules: enable or disable, edit, delete (confirmed), and the last notification that failed. */
export const AlarmRules = ({ api, workspaceId, rules, items }: { api: ApiClient; workspaceId: string; rules: Rules; items: Items }) => {
  const groups = useLoad(
    () => api.listGroups(workspaceId, { limit: 100 }).then((page) => page.items.map((g) => ({ id: g.id, name: g.name, detail: g.query }))),
    [workspaceId],
  );
  const [editing, setEditing] = useState<AlarmRule | 'new' | undefined>(undefined);
  const change = useAction();
  const { ask, dialog } = useConfirm();
  const saved = () => {
    setEditing(undefined);
    rules.reload();
  };
  return (
    <section aria-labelledby="rules-h">
      <h3 id="rules-h">Rules</h3>
      <ErrorBox error={rules.error ?? change.error} />
      {!rules.data && !rules.error && <Busy label="Reading the rules…" />}
      {rules.data && !rules.data.length && <p>No rule yet: a rule says what to watch, on which devices, for how long.</p>}
      {rules.data && rules.data.length > 0 && (
        <table class="list" data-testid="alarm-rules">
          <thead>
            <tr>
              <th scope="col">Rule</th>
              <th scope="col">Kind</th>
              <th scope="col">Severity</th>
              <th scope="col">Devices</th>
              <th scope="col">For</th>
              <th scope="col">Last notification error</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rules.data.map((r) => (
              <tr data-rule={r.id} data-enabled={r.enabled}>
                <td>
                  <Name text={r.name} />
                  {r.enabled ? '' : ' (disabled)'}
                </td>
                <td>
                  {r.kind}
                  {r.tag ? ` on ${r.tag}` : ''}
                  {r.kind === 'threshold' ? ` ${r.field} ${r.op} ${r.value} (clears at ${r.clear_value ?? r.value})` : ''}
                </td>
                <td>{r.severity}</td>
                <td>{targetText(r, items.fleets, groups.data)}</td>
                <td>{r.for_seconds} s</td>
                <td data-testid="rule-notification-error">
                  {r.last_notification_error
                    ? `${r.last_notification_error.error}${r.last_notification_error.email ? ` (${r.last_notification_error.email})` : ' (webhook event)'}, ${when(r.last_notification_error.at)}`
                    : '—'}
                </td>
                <td>
                  <button type="button" onClick={() => setEditing(r)}>
                    Edit
                  </button>{' '}
                  <button
                    type="button"
                    disabled={change.busy}
                    onClick={async () => {
                      if (r.enabled) {
                        const go = await ask({
                          title: `Disable the rule ${r.name}?`,
                          consequence: 'Its alarms that are not closed close now, and none opens until it is enabled again.',
                          confirmLabel: 'Disable the rule',
                        });
                        if (!go) return;
                      }
                      if (await change.run(() => api.updateAlarmRule(workspaceId, r.id, { enabled: !r.enabled }))) rules.reload();
                    }}
                  >
                    {r.enabled ? 'Disable' : 'Enable'}
                  </button>{' '}
                  <button
                    type="button"
                    class="danger"
                    disabled={change.busy}
                    onClick={async () => {
                      const go = await ask({
                        title: `Delete the rule ${r.name}?`,
                        consequence: 'Its alarms that are not closed close, and the rule is gone: this cannot be undone.',
                        confirmLabel: 'Delete the rule',
                      });
                      if (go && (await change.run(() => api.deleteAlarmRule(workspaceId, r.id))) !== undefined) rules.reload();
                    }}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing ? (
        <RuleEditor
          key={editing === 'new' ? 'new' : editing.id}
          api={api}
          workspaceId={workspaceId}
          items={items}
          groups={groups.data}
          editing={editing === 'new' ? undefined : editing}
          onSaved={saved}
          onCancel={() => setEditing(undefined)}
        />
      ) : (
        <button type="button" onClick={() => setEditing('new')}>
          New rule
        </button>
      )}
      {dialog}
    </section>
  );
};
