import { useEffect, useState } from 'preact/hooks';
import type { ApiClient, DryRun, Fota, Job, RolloutSettingsInput, TargetQuery } from '../lib/api';
import { ApiError } from '../lib/errors';
import { parseJsonObject } from '../lib/json-input';
import { routeHash } from '../lib/router';
import {
  checkRolloutFields,
  checkTimeout,
  EMPTY_ROLLOUT_FIELDS,
  MAX_PER_MINUTE_MAX,
  MIN_FINISHED_MAX,
  rolloutFieldErrors,
  TIMEOUT_SECONDS_MAX,
  type RolloutField,
  type RolloutFields,
} from '../lib/rollouts';
import { ErrorBox, Field, Submit, useAction, useLoad } from './components';
import { useConfirm, type ConfirmRequest } from './confirm';

/**
 * Where a job or FOTA goes: one device, or the devices of chosen fleets (none chosen: every fleet)
 * that match a group or a query when one is given, with the settings of the rollout the
 * scheduling creates (`invalid` while the form's are wrong).
 */
export type Target =
  | { kind: 'device'; deviceId: string }
  | {
      kind: 'fleets';
      workspaceId: string;
      fleetIds: string[];
      /** The fleets' names by ID, for the confirmation. */
      fleetNames?: Record<string, string>;
      /** Only the devices of this group (by ID, its name for the confirmation). */
      group?: { id: string; name: string };
      /** Only the devices that match this query. */
      q?: string;
      rollout?: RolloutSettingsInput;
      invalid: boolean;
      onApiError: (error: unknown) => void;
    };

const devicesText = (n: number) => `${n.toLocaleString('en-US')} device${n === 1 ? '' : 's'}`;

/** The query string of a fleet-wide target: its fleets (none: every fleet), its group or its query. */
export const targetOf = (target: Extract<Target, { kind: 'fleets' }>): TargetQuery => ({
  ...(target.fleetIds.length ? { fleets: target.fleetIds } : {}),
  ...(target.group ? { group: target.group.id } : {}),
  ...(target.q ? { q: target.q } : {}),
});

/**
 * The confirmation of a fleet-wide scheduling, from its dry run: how many devices, in which fleets,
 * and, said outright, that no fleet ticked means every fleet of the workspace.
 */
export const fleetWideConfirmation = (
  what: string,
  dry: DryRun,
  target: Extract<Target, { kind: 'fleets' }>,
  /** The action's verb ("Schedule") and what each device gets, when not a job's or a FOTA's. */
  { verb = 'Schedule', note }: { verb?: string; note?: string } = {},
): ConfirmRequest => {
  const names = target.fleetIds.map((id) => target.fleetNames?.[id] ?? id);
  const where = target.fleetIds.length
    ? `the ${target.fleetIds.length === 1 ? 'fleet' : 'fleets'} ${names.join(', ')}`
    : 'every fleet of the workspace (no fleet is ticked, which means every fleet)';
  const matching = target.group ? `the group ${target.group.name}` : target.q ? `the query ${target.q}` : '';
  // a group or a query with no fleet ticked: its devices in any fleet
  const those = matching
    ? target.fleetIds.length
      ? `those in ${where} that match ${matching}`
      : `those that match ${matching} (in any fleet)`
    : `those in ${where}`;
  const continuous = target.rollout?.continuous === true;
  return {
    title: `${verb} ${what} on ${devicesText(dry.targets)}${continuous ? ' and those that match later' : ''}?`,
    consequence: (
      <>
        <p data-testid="confirm-count">
          {dry.targets === 0
            ? `No device is one of ${those} now: the rollout would target none${continuous ? ' until one matches' : ''}.`
            : `This targets ${devicesText(dry.targets)}: ${those} now.`}
        </p>
        {continuous && (
          <p data-testid="confirm-continuous">
            <strong>Continuous:</strong> a device that matches later (created or moved into these fleets, re-tagged) gets it too, within a minute. The rollout
            never completes by itself: cancel it to stop.
          </p>
        )}
        {!target.fleetIds.length && !matching && (
          <p>
            <strong>No fleet is ticked: this schedules on every fleet.</strong> Tick fleets to narrow it.
          </p>
        )}
        <p>{note ?? 'Each device gets it as its rollout releases it; a job of the same name on a device is replaced.'}</p>
      </>
    ),
    confirmLabel: `${verb} on ${devicesText(dry.targets)}`,
  };
};

const NAME_RULE = '^[A-Za-z0-9_.\\-]{1,64}$';

/** A field's message, said next to it and named by it (`aria-describedby`). */
const FieldMessage = ({ id, message }: { id: string; message?: string }) =>
  message ? (
    <small id={id} class="invalid">
      {message}
    </small>
  ) : null;

/** The rollout settings of a fleet-wide scheduling, checked as they are typed and named by the API's 400 too. */
export const useRolloutSettings = () => {
  const [fields, setFields] = useState<RolloutFields>(EMPTY_ROLLOUT_FIELDS);
  const [continuous, setContinuous] = useState(false);
  const [apiErrors, setApiErrors] = useState<Partial<Record<RolloutField, string>>>({});
  const checked = checkRolloutFields(fields);
  const set = (field: RolloutField, value: string) => {
    setFields((all) => ({ ...all, [field]: value }));
    setApiErrors((all) => ({ ...all, [field]: undefined }));
  };
  /** Shows a 400's details next to the settings they name. */
  const onApiError = (error: unknown) => setApiErrors(error instanceof ApiError && error.status === 400 ? rolloutFieldErrors(error.details) : {});
  const settings: RolloutSettingsInput | undefined = continuous ? { ...checked.settings, continuous: true } : checked.settings;
  return {
    fields,
    set,
    continuous,
    setContinuous,
    settings,
    errors: { ...apiErrors, ...checked.errors },
    invalid: Object.keys(checked.errors).length > 0,
    onApiError,
  };
};

const SETTINGS: ReadonlyArray<{ field: RolloutField; name: string; label: string; hint: string; min: number; max: number; step: number | 'any' }> = [
  {
    field: 'maxPerMinute',
    name: 'rollout-max-per-minute',
    label: 'Devices released a minute',
    hint: `1 to ${MAX_PER_MINUTE_MAX.toLocaleString('en-US')}; empty: all at once. The others wait as queued.`,
    min: 1,
    max: MAX_PER_MINUTE_MAX,
    step: 1,
  },
  {
    field: 'timeoutSeconds',
    name: 'rollout-timeout',
    label: 'Timeout (seconds)',
    hint: `1 to ${TIMEOUT_SECONDS_MAX.toLocaleString('en-US')} (a week) after each device's release; empty: none.`,
    min: 1,
    max: TIMEOUT_SECONDS_MAX,
    step: 1,
  },
  {
    field: 'failurePercentage',
    name: 'rollout-abort-percentage',
    label: 'Abort at failures (%)',
    hint: '0.01 to 100: the share of ended devices that failed or timed out. Empty: never abort.',
    min: 0.01,
    max: 100,
    step: 'any',
  },
  {
    field: 'minFinished',
    name: 'rollout-abort-min-finished',
    label: 'Abort only after (ended devices)',
    hint: `1 to ${MIN_FINISHED_MAX.toLocaleString('en-US')}: the rule applies once this many have ended.`,
    min: 1,
    max: MIN_FINISHED_MAX,
    step: 1,
  },
];

/** The rollout settings' fields, each with its rule and, when wrong, what is wrong. */
export const RolloutSettingsFieldset = ({ settings }: { settings: ReturnType<typeof useRolloutSettings> }) => (
  <fieldset class="rollout-settings">
    <legend>Rollout settings (all optional)</legend>
    <label class="switch">
      <input
        type="checkbox"
        role="switch"
        aria-checked={settings.continuous}
        name="rollout-continuous"
        checked={settings.continuous}
        onChange={(e) => settings.setContinuous(e.currentTarget.checked)}
      />{' '}
      Continuous: also devices that match later
      <small class="hint"> (created in or moved into the fleets, re-tagged: each gets it within a minute; the rollout runs until canceled)</small>
    </label>
    {SETTINGS.map(({ field, name, label, hint, min, max, step }) => (
      <Field label={label} hint={hint}>
        <input
          type="number"
          name={name}
          min={min}
          max={max}
          step={step}
          value={settings.fields[field]}
          aria-invalid={Boolean(settings.errors[field])}
          aria-describedby={settings.errors[field] ? `${name}-error` : undefined}
          onInput={(e) => settings.set(field, e.currentTarget.value)}
        />
        <FieldMessage id={`${name}-error`} message={settings.errors[field]} />
      </Field>
    ))}
  </fieldset>
);

/** A device scheduling's optional timeout, checked as it is typed and named by the API's 400 too. */
const TimeoutField = ({ name, text, onInput, apiError }: { name: string; text: string; onInput: (text: string) => void; apiError?: string }) => {
  const message = checkTimeout(text).error ?? apiError;
  return (
    <Field label="Timeout (seconds, optional)" hint={`1 to ${TIMEOUT_SECONDS_MAX.toLocaleString('en-US')}; not ended by then, it is timed out.`}>
      <input
        type="number"
        name={name}
        min={1}
        max={TIMEOUT_SECONDS_MAX}
        step={1}
        value={text}
        aria-invalid={Boolean(message)}
        aria-describedby={message ? `${name}-error` : undefined}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      <FieldMessage id={`${name}-error`} message={message} />
    </Field>
  );
};

/** Tells the rollout settings each new error of a fleet-wide scheduling, so that they show what a 400 names. */
export const useSettingsErrors = (target: Target, error: unknown) =>
  useEffect(() => {
    if (target.kind === 'fleets') target.onApiError(error);
  }, [error]);

/** The message of a 400 about `body.timeout_seconds`, for the field. */
const timeoutApiError = (error: unknown) => (error instanceof ApiError ? error.details.find((d) => d.field === 'body.timeout_seconds')?.message : undefined);

/** A job's name and its value, edited as JSON and checked before it is sent. */
export const ScheduleJobForm = ({ api, target, onScheduled }: { api: ApiClient; target: Target; onScheduled: (job: Job, name: string) => void }) => {
  const [name, setName] = useState('');
  const [value, setValue] = useState('{\n  \n}');
  const [timeout, setTimeoutText] = useState('');
  const parsed = parseJsonObject(value);
  const { busy, error, run } = useAction();
  const confirm = useConfirm();
  useSettingsErrors(target, error);
  const invalid = !parsed.ok || (target.kind === 'fleets' ? target.invalid : Boolean(checkTimeout(timeout).error));
  return (
    <form
      class="stack"
      aria-labelledby="job-new"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!parsed.ok || invalid) return;
        if (target.kind === 'fleets') {
          // the dry run's count first (and any refusal the scheduling would meet), then the person's yes
          const dry = await run(() => api.dryRunFleetJob(target.workspaceId, name, parsed.value, targetOf(target), target.rollout));
          if (!dry || !(await confirm.ask(fleetWideConfirmation(`job ${name}`, dry, target)))) return;
        }
        const job = await run(() =>
          target.kind === 'device'
            ? api.scheduleJob(target.deviceId, name, parsed.value, checkTimeout(timeout).value)
            : api.scheduleFleetJob(target.workspaceId, name, parsed.value, targetOf(target), target.rollout),
        );
        if (job) onScheduled(job, name);
      }}
    >
      <h3 id="job-new">Schedule a job</h3>
      <Field label="Job name" hint="Letters, digits, _ . - (at most 64); a job of the same name is replaced.">
        <input name="job-name" required pattern={NAME_RULE} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Value (JSON object)">
        <textarea
          name="job-value"
          rows={6}
          spellcheck={false}
          aria-invalid={!parsed.ok}
          aria-describedby="job-value-check"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </Field>
      <p id="job-value-check" class={parsed.ok ? 'ok' : 'invalid'} role="status">
        {parsed.ok ? 'Valid JSON object.' : parsed.error}
      </p>
      {target.kind === 'device' && <TimeoutField name="job-timeout" text={timeout} onInput={setTimeoutText} apiError={timeoutApiError(error)} />}
      <Submit busy={busy} disabled={busy || invalid}>
        Schedule job
      </Submit>
      <ErrorBox error={error} />
      {confirm.dialog}
    </form>
  );
};

/** The choice "another version" in the firmware menu: typed, and scheduled as in v3 (without an image). */
const OTHER = '';

/**
 * A firmware version to install: one of the workspace's ready versions (their images uploaded on
 * the Firmware page), or another typed by hand.
 */
export const ScheduleFotaForm = ({
  api,
  workspaceId,
  target,
  onScheduled,
}: {
  api: ApiClient;
  workspaceId: string;
  target: Target;
  onScheduled: (fota: Fota) => void;
}) => {
  const firmwares = useLoad(() => api.listFirmwares(workspaceId).then((page) => page.items.filter((f) => f.status === 'ready')), [workspaceId]);
  const [choice, setChoice] = useState<string | undefined>(undefined);
  const [firmwareId, setFirmwareId] = useState('');
  const [version, setVersion] = useState('');
  const [timeout, setTimeoutText] = useState('');
  const { busy, error, run } = useAction();
  const confirm = useConfirm();
  useSettingsErrors(target, error);
  const ready = firmwares.data ?? [];
  // the first ready version until the person chooses
  const chosen = choice ?? (ready.length ? JSON.stringify([ready[0].firmware_id, ready[0].version]) : OTHER);
  const [id, ver] = chosen === OTHER ? [firmwareId, version] : (JSON.parse(chosen) as [string, string]);
  const invalid = target.kind === 'fleets' ? target.invalid : Boolean(checkTimeout(timeout).error);
  return (
    <form
      class="stack"
      aria-labelledby="fota-new"
      onSubmit={async (e) => {
        e.preventDefault();
        if (invalid) return;
        if (target.kind === 'fleets') {
          const dry = await run(() => api.dryRunFleetFota(target.workspaceId, id, ver, targetOf(target), target.rollout));
          if (!dry || !(await confirm.ask(fleetWideConfirmation(`firmware ${id} ${ver}`, dry, target)))) return;
        }
        const fota = await run(() =>
          target.kind === 'device'
            ? api.scheduleFota(target.deviceId, id, ver, checkTimeout(timeout).value)
            : api.scheduleFleetFota(target.workspaceId, id, ver, targetOf(target), target.rollout),
        );
        if (fota) onScheduled(fota);
      }}
    >
      <h3 id="fota-new">Schedule a firmware update</h3>
      <Field label="Firmware" hint="Ready versions have their image uploaded: the device gets a download link.">
        <select name="firmware" value={chosen} onChange={(e) => setChoice(e.currentTarget.value)}>
          {ready.map((f) => (
            <option value={JSON.stringify([f.firmware_id, f.version])}>
              {f.firmware_id} {f.version}
              {f.description ? ` — ${f.description}` : ''}
            </option>
          ))}
          <option value={OTHER}>Another version (typed; no image)</option>
        </select>
      </Field>
      <ErrorBox error={firmwares.error} />
      {chosen === OTHER && (
        <>
          <Field label="Firmware ID">
            <input name="firmware-id" required pattern={NAME_RULE} value={firmwareId} onInput={(e) => setFirmwareId(e.currentTarget.value)} />
          </Field>
          <Field label="Firmware version">
            <input name="firmware-version" required pattern={NAME_RULE} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
          </Field>
        </>
      )}
      <p class="hint">
        <a href={routeHash({ page: 'firmware', workspaceId })}>Upload a firmware image</a> to offer it here.
      </p>
      {target.kind === 'device' && <TimeoutField name="fota-timeout" text={timeout} onInput={setTimeoutText} apiError={timeoutApiError(error)} />}
      <Submit busy={busy} disabled={busy || invalid}>
        Schedule FOTA
      </Submit>
      <ErrorBox error={error} />
      {confirm.dialog}
    </form>
  );
};
