import { useEffect, useState } from 'preact/hooks';
import type { ApiClient, Condition } from '../lib/api';
import { conditionDuration, conditionRows, durationText } from '../lib/conditions';
import { Busy, ErrorBox, useAction, useLoad, when } from './components';
import { STALE_EVENT } from './device-health';

/** Closed conditions read at a time (the open ones are read whole: a device keeps few open). */
const CLOSED_PAGE = 20;

const payloadText = (v: unknown) => {
  if (v === null || v === undefined) return '—';
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
};

/** A device's conditions (spec/fleet-state.md §4): the open ones first, then the closed ones, newest first, a page at a time. */
export const DeviceConditions = ({ api, workspaceId, deviceId }: { api: ApiClient; workspaceId: string; deviceId: string }) => {
  const load = () =>
    Promise.all([
      api.listConditions(workspaceId, { device: deviceId, status: 'open' }),
      api.listConditions(workspaceId, { device: deviceId, status: 'closed' }, { limit: CLOSED_PAGE }),
    ]);
  const lists = useLoad(load, [workspaceId, deviceId]);
  const [older, setOlder] = useState<{ items: Condition[]; next: string | null } | undefined>(undefined);
  const more = useAction();
  useEffect(() => setOlder(undefined), [workspaceId, deviceId]);
  // Read again with the device's health (the page's Refresh, a new point or a connection change).
  useEffect(() => {
    const now = () => {
      setOlder(undefined);
      lists.reload();
    };
    addEventListener(STALE_EVENT, now);
    return () => removeEventListener(STALE_EVENT, now);
  }, [workspaceId, deviceId]);

  const [open, closed] = lists.data ?? [undefined, undefined];
  const rows = open && closed ? conditionRows(open.items, [...closed.items, ...(older?.items ?? [])]) : [];
  const next = older ? older.next : (closed?.next ?? null);
  return (
    <section aria-labelledby="conditions-h">
      <h3 id="conditions-h">Conditions</h3>
      <ErrorBox error={lists.error ?? more.error} />
      {!lists.data && !lists.error && <Busy label="Reading the device’s conditions…" />}
      {lists.data && !rows.length && <p>The device has opened no condition.</p>}
      {rows.length > 0 && (
        <table class="list" data-testid="device-conditions">
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col">State</th>
              <th scope="col">Opened</th>
              <th scope="col">Closed</th>
              <th scope="col">Duration</th>
              <th scope="col">Payload</th>
              <th scope="col">Closing payload</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr data-condition={c.uuid} data-status={c.status}>
                <td title={`uuid ${c.uuid}`}>{c.tag}</td>
                <td>{c.status === 'open' ? <strong>open</strong> : 'closed'}</td>
                <td>{when(c.start)}</td>
                <td>{when(c.finish)}</td>
                <td>
                  {durationText(conditionDuration(c))}
                  {c.status === 'open' ? ' so far' : ''}
                </td>
                <td>
                  <code>{payloadText(c.payload)}</code>
                </td>
                <td>
                  <code>{payloadText(c.finish_payload)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button
        type="button"
        onClick={() => {
          setOlder(undefined);
          lists.reload();
        }}
      >
        Refresh conditions
      </button>{' '}
      {next && (
        <button
          type="button"
          disabled={more.busy}
          onClick={async () => {
            const page = await more.run(() => api.listConditions(workspaceId, { device: deviceId, status: 'closed' }, { limit: CLOSED_PAGE, cursor: next }));
            if (page) setOlder((was) => ({ items: [...(was?.items ?? []), ...page.items], next: page.next }));
          }}
        >
          Older conditions
        </button>
      )}
    </section>
  );
};
