import { useState } from 'preact/hooks';
import { alarmDetailsText, countText, SEVERITIES, sortAlarms, withAlarm } from '../lib/alarms';
import type { Alarm, AlarmFilter, ApiClient } from '../lib/api';
import type { Pickable } from '../lib/pickers';
import { routeHash } from '../lib/router';
import { formatIso } from '../lib/time';
import { AlarmRules } from './alarm-rules';
import { Busy, ErrorBox, Name, useAction, useLoad, when } from './components';
import { useLive, useThrottled } from './live';
import type { PageProps } from './page';
import { EntityPicker, pickedIds, usePickerState, useWorkspaceItems } from './picker';

/** How soon a pushed transition reads the alarms again at most (a burst of transitions is one read). */
const ALARM_REFRESH_MS = 1_000;
/** Alarms read at most per status (open and acknowledged: all a page shows; closed: the newest). */
const OPEN_PAGE = 200;
const CLOSED_PAGE = 50;

/** The alarms of a filter, open first, by severity then newest: without a status, the open, acknowledged and newest closed ones. */
const readAlarms = async (api: ApiClient, workspaceId: string, filter: AlarmFilter) => {
  if (filter.status) return sortAlarms((await api.listAlarms(workspaceId, filter, { limit: filter.status === 'closed' ? CLOSED_PAGE : OPEN_PAGE })).items);
  const pages = await Promise.all([
    api.listAlarms(workspaceId, { ...filter, status: 'open' }, { limit: OPEN_PAGE }),
    api.listAlarms(workspaceId, { ...filter, status: 'acknowledged' }, { limit: OPEN_PAGE }),
    api.listAlarms(workspaceId, { ...filter, status: 'closed' }, { limit: CLOSED_PAGE }),
  ]);
  return sortAlarms(pages.flatMap((p) => p.items));
};

/** A device's name linked to its page (its ID when it has no name here: deleted, or not listed yet). */
const DeviceLink = ({ workspaceId, deviceId, devices }: { workspaceId: string; deviceId: string; devices: readonly Pickable[] | undefined }) => (
  <a href={routeHash({ page: 'device', workspaceId, deviceId })} title={deviceId} data-testid="alarm-device">
    <Name text={devices?.find((d) => d.id === deviceId)?.name ?? deviceId} title={deviceId} />
  </a>
);

/** Acknowledging in place: a note (optional), then the alarm as the API answers it. */
const Acknowledge = ({ api, workspaceId, alarm, onDone }: { api: ApiClient; workspaceId: string; alarm: Alarm; onDone: (alarm: Alarm) => void }) => {
  const [open, setOpen] = useState(false);
  const [note, setNote] = useState('');
  const { busy, error, run } = useAction();
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Acknowledge
      </button>
    );
  return (
    <form
      class="inline"
      aria-label={`Acknowledge the alarm of ${alarm.rule_name}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const done = await run(() => api.acknowledgeAlarm(workspaceId, alarm.id, note.trim() || undefined));
        if (done) onDone(done);
      }}
    >
      <input
        name="ack-note"
        aria-label="Note (optional)"
        placeholder="Note (optional)"
        maxLength={1024}
        value={note}
        onInput={(e) => setNote(e.currentTarget.value)}
      />{' '}
      <button type="submit" disabled={busy} aria-busy={busy}>
        Acknowledge
      </button>{' '}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <ErrorBox error={error} hints={{ 409: 'It closed in the meantime: there is nothing to acknowledge.' }} />
    </form>
  );
};

/** Alarms as rows: rule, kind, severity, device (its name, linked), times in the console's zone, details in words, acknowledge in place. */
export const AlarmTable = ({
  api,
  workspaceId,
  alarms,
  devices,
  onChanged,
  showDevice = true,
}: {
  api: ApiClient;
  workspaceId: string;
  alarms: readonly Alarm[];
  devices: readonly Pickable[] | undefined;
  onChanged: (alarm: Alarm) => void;
  showDevice?: boolean;
}) => (
  <table class="list" data-testid="alarms">
    <thead>
      <tr>
        <th scope="col">Rule</th>
        <th scope="col">Kind</th>
        <th scope="col">Severity</th>
        {showDevice && <th scope="col">Device</th>}
        <th scope="col">Status</th>
        <th scope="col">Opened</th>
        <th scope="col">Acknowledged</th>
        <th scope="col">Closed</th>
        <th scope="col">Details</th>
      </tr>
    </thead>
    <tbody>
      {alarms.map((a) => (
        <tr data-alarm={a.id} data-status={a.status} data-severity={a.severity}>
          <td>
            <Name text={a.rule_name} />
          </td>
          <td>{a.kind}</td>
          <td>
            <span class={`severity severity-${a.severity}`}>{a.severity}</span>
          </td>
          {showDevice && (
            <td>
              <DeviceLink workspaceId={workspaceId} deviceId={a.device_id} devices={devices} />
            </td>
          )}
          <td data-testid="alarm-status">{a.status === 'open' ? <strong>open</strong> : a.status}</td>
          <td>{when(a.opened_at)}</td>
          <td data-testid="alarm-acknowledged">
            {a.acknowledged_at ? (
              <>
                {when(a.acknowledged_at)} by {a.acknowledged_by ?? 'someone'}
                {a.note ? <div class="hint">“{a.note}”</div> : null}
              </>
            ) : a.status === 'open' ? (
              <Acknowledge api={api} workspaceId={workspaceId} alarm={a} onDone={onChanged} />
            ) : (
              '—'
            )}
          </td>
          <td>{when(a.closed_at)}</td>
          <td>{alarmDetailsText(a, (iso) => formatIso(iso))}</td>
        </tr>
      ))}
    </tbody>
  </table>
);

/** The Alarms page: the alarms, open first, filtered, live; then the rules and their editor. */
export const AlarmsPage = ({ api, workspaceId }: PageProps) => {
  const items = useWorkspaceItems(api, workspaceId);
  const rules = useLoad(() => api.listAlarmRules(workspaceId), [workspaceId]);
  const [status, setStatus] = useState<AlarmFilter['status'] | ''>('');
  const [severity, setSeverity] = useState<AlarmFilter['severity'] | ''>('');
  const [rule, setRule] = useState('');
  const device = usePickerState();
  const deviceId = pickedIds(device, items.devices)[0] ?? '';
  const filter: AlarmFilter = {
    ...(status ? { status } : {}),
    ...(severity ? { severity } : {}),
    ...(rule ? { rule } : {}),
    ...(deviceId ? { device: deviceId } : {}),
  };
  const alarms = useLoad(() => readAlarms(api, workspaceId, filter), [workspaceId, status, severity, rule, deviceId]);
  // A transition pushed by the live layer reads the alarms again (at most once a second).
  const soon = useThrottled(alarms.reload, ALARM_REFRESH_MS);
  useLive(workspaceId, 'alarm', soon);

  return (
    <>
      <h2>Alarms</h2>
      <form class="filters" aria-label="Filter the alarms" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status{' '}
          <select name="alarm-status" value={status} onChange={(e) => setStatus(e.currentTarget.value as AlarmFilter['status'] | '')}>
            <option value="">Any (open first)</option>
            <option value="open">open</option>
            <option value="acknowledged">acknowledged</option>
            <option value="closed">closed</option>
          </select>
        </label>{' '}
        <label>
          Severity{' '}
          <select name="alarm-severity" value={severity} onChange={(e) => setSeverity(e.currentTarget.value as AlarmFilter['severity'] | '')}>
            <option value="">Any</option>
            {SEVERITIES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>{' '}
        <label>
          Rule{' '}
          <select name="alarm-rule" value={rule} onChange={(e) => setRule(e.currentTarget.value)}>
            <option value="">Any</option>
            {rules.data?.map((r) => (
              <option value={r.id}>{r.name}</option>
            ))}
          </select>
        </label>
        <EntityPicker label="Device" name="alarm-device" hint="Type part of its name" items={items.devices} state={device} />
      </form>
      <ErrorBox error={alarms.error ?? items.error} />
      {!alarms.data && !alarms.error && <Busy label="Reading the alarms…" />}
      {alarms.data && !alarms.data.length && <p data-testid="no-alarms">No alarm{Object.keys(filter).length ? ' matches these filters' : ''}.</p>}
      {alarms.data && alarms.data.length > 0 && (
        <AlarmTable
          api={api}
          workspaceId={workspaceId}
          alarms={alarms.data}
          devices={items.devices}
          onChanged={(changed) => alarms.setData((was) => withAlarm(was ?? [], changed))}
        />
      )}
      <p class="hint">Changes show as they happen (a transition reads the list again within a second or two).</p>
      <AlarmRules api={api} workspaceId={workspaceId} rules={rules} items={items} />
    </>
  );
};

/** A device's open alarms (open and acknowledged), with acknowledge, beside its conditions; live. */
export const DeviceAlarms = ({ api, workspaceId, deviceId }: { api: ApiClient; workspaceId: string; deviceId: string }) => {
  const load = async () => {
    const [open, acknowledged] = await Promise.all([
      api.listAlarms(workspaceId, { device: deviceId, status: 'open' }, { limit: OPEN_PAGE }),
      api.listAlarms(workspaceId, { device: deviceId, status: 'acknowledged' }, { limit: OPEN_PAGE }),
    ]);
    return sortAlarms([...open.items, ...acknowledged.items]);
  };
  const alarms = useLoad(load, [workspaceId, deviceId]);
  const soon = useThrottled(alarms.reload, ALARM_REFRESH_MS);
  useLive(workspaceId, 'alarm', (message) => {
    if (!message || message.device_id === deviceId) soon();
  });
  return (
    <section aria-labelledby="device-alarms-h">
      <h3 id="device-alarms-h">Open alarms</h3>
      <ErrorBox error={alarms.error} />
      {!alarms.data && !alarms.error && <Busy label="Reading the device’s alarms…" />}
      {alarms.data && !alarms.data.length && <p data-testid="no-device-alarms">None open.</p>}
      {alarms.data && alarms.data.length > 0 && (
        <AlarmTable
          api={api}
          workspaceId={workspaceId}
          alarms={alarms.data}
          devices={undefined}
          showDevice={false}
          onChanged={(changed) => alarms.setData((was) => withAlarm(was ?? [], changed))}
        />
      )}
      <p>
        <a href={routeHash({ page: 'alarms', workspaceId })}>All alarms</a>
      </p>
    </section>
  );
};

/**
 * The navigation's count of open alarms (not yet acknowledged), read again at each pushed
 * transition: one page of the open alarms ("200+" past it).
 */
export const OpenAlarmCount = ({ api, workspaceId }: { api: ApiClient; workspaceId: string }) => {
  const open = useLoad(() => api.listAlarms(workspaceId, { status: 'open' }, { limit: OPEN_PAGE }), [workspaceId]);
  const soon = useThrottled(open.reload, ALARM_REFRESH_MS);
  useLive(workspaceId, 'alarm', soon);
  if (!open.data?.items.length) return null;
  const text = countText(open.data.items.length, Boolean(open.data.next));
  return (
    <span class="badge alarm-count" data-testid="nav-alarm-count" title={`${text} open alarms, not yet acknowledged`}>
      {text}
    </span>
  );
};
