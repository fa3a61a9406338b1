import { useState } from 'preact/hooks';
import type { ApiClient, Fota, Job } from '../lib/api';
import { parseJsonObject } from '../lib/json-input';
import { ErrorBox, Field, Submit, useAction } from './components';

/** Where a job or FOTA goes: one device, or the devices of chosen fleets (none chosen: every fleet). */
export type Target = { kind: 'device'; deviceId: string } | { kind: 'fleets'; workspaceId: string; fleetIds: string[] };

const NAME_RULE = '^[A-Za-z0-9_.\\-]{1,64}$';

/** A job's name and its value, edited as JSON and checked before it is sent. */
export const ScheduleJobForm = ({ api, target, onScheduled }: { api: ApiClient; target: Target; onScheduled: (job: Job, name: string) => void }) => {
  const [name, setName] = useState('');
  const [value, setValue] = useState('{\n  \n}');
  const parsed = parseJsonObject(value);
  const { busy, error, run } = useAction();
  return (
    <form
      class="stack"
      aria-labelledby="job-new"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!parsed.ok) return;
        const job = await run(() =>
          target.kind === 'device'
            ? api.scheduleJob(target.deviceId, name, parsed.value)
            : api.scheduleFleetJob(target.workspaceId, name, parsed.value, target.fleetIds.length ? target.fleetIds : undefined),
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
      <Submit busy={busy} disabled={busy || !parsed.ok}>
        Schedule job
      </Submit>
      <ErrorBox error={error} />
    </form>
  );
};

/** A firmware ID and version to install. */
export const ScheduleFotaForm = ({ api, target, onScheduled }: { api: ApiClient; target: Target; onScheduled: (fota: Fota) => void }) => {
  const [firmwareId, setFirmwareId] = useState('');
  const [version, setVersion] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="stack"
      aria-labelledby="fota-new"
      onSubmit={async (e) => {
        e.preventDefault();
        const fota = await run(() =>
          target.kind === 'device'
            ? api.scheduleFota(target.deviceId, firmwareId, version)
            : api.scheduleFleetFota(target.workspaceId, firmwareId, version, target.fleetIds.length ? target.fleetIds : undefined),
        );
        if (fota) onScheduled(fota);
      }}
    >
      <h3 id="fota-new">Schedule a firmware update</h3>
      <Field label="Firmware ID">
        <input name="firmware-id" required pattern={NAME_RULE} value={firmwareId} onInput={(e) => setFirmwareId(e.currentTarget.value)} />
      </Field>
      <Field label="Firmware version">
        <input name="firmware-version" required pattern={NAME_RULE} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
      </Field>
      <Submit busy={busy}>Schedule FOTA</Submit>
      <ErrorBox error={error} />
    </form>
  );
};
