import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import type { ApiClient, DeviceState } from '../lib/api';
import { ApiError } from '../lib/errors';
import {
  checkDesiredRows,
  conflictOf,
  desiredErrorsOf,
  desiredPatch,
  desiredRows,
  jsonText,
  rebasedRows,
  rowsChanged,
  stateRows,
  STATE_DOCUMENT_MAX_BYTES,
  STATE_KEY_HINT,
  type Conflict,
  type DesiredRow,
  type KeyStanding,
} from '../lib/state';
import { Busy, ErrorBox, Submit, useAction, useLoad, when } from './components';
import { STALE_EVENT } from './device-health';
import { useLive, useThrottled } from './live';

/** How often the live layer's messages of the device read its state again at most (as its health). */
const LIVE_REFRESH_MS = 4_000;

const STANDING: Record<KeyStanding, string> = {
  applied: 'applied',
  pending: 'not applied yet',
  reported_only: 'reported only',
};

/** A value of one side with when it was set, or a dash when the side has no such key. */
const Side = ({ side }: { side?: { value: unknown; at?: string } }) =>
  side ? (
    <>
      <code class="clip" title={JSON.stringify(side.value)}>
        {jsonText(side.value)}
      </code>
      {side.at && <small class="hint"> set {when(side.at)}</small>}
    </>
  ) : (
    <span title="none">—</span>
  );

/** Desired, reported and the delta side by side, a row per key. */
const StateTable = ({ state }: { state: DeviceState }) => {
  const rows = stateRows(state);
  if (!rows.length) return <p data-testid="state-empty">No desired or reported state yet.</p>;
  return (
    <table class="list" data-testid="device-state">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Desired</th>
          <th scope="col">Reported</th>
          <th scope="col">Delta</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr data-key={row.key} data-standing={row.standing}>
            <th scope="row">{row.key}</th>
            <td data-side="desired">
              <Side side={row.desired} />
            </td>
            <td data-side="reported">
              <Side side={row.reported} />
            </td>
            <td data-side="delta" class={row.standing === 'pending' ? 'invalid' : row.standing === 'applied' ? 'ok' : undefined}>
              {row.standing === 'pending' ? `→ ${jsonText(row.desired?.value, 60)} (${STANDING.pending})` : STANDING[row.standing]}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
};

const shown = (value: unknown) => (value === undefined ? '(absent)' : value === null ? '(removed)' : jsonText(value, 60));

/** A save refused because the desired state changed meanwhile: the person's changes beside the state now, and what to do. */
const ConflictBox = ({ conflict, onKeep, onDiscard }: { conflict: Conflict; onKeep: () => void; onDiscard: () => void }) => (
  <div class="card alert" role="alert" data-testid="state-conflict">
    <strong>
      Not saved: the desired state changed meanwhile (version {conflict.fromVersion} → {conflict.toVersion}). Nothing was overwritten.
    </strong>
    <p>The table above shows the state now. Your changes:</p>
    <table class="list">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">When you began</th>
          <th scope="col">Yours</th>
          <th scope="col">Now</th>
        </tr>
      </thead>
      <tbody>
        {conflict.keys.map((k) => (
          <tr data-key={k.key}>
            <th scope="row">{k.key}</th>
            <td>{shown(k.base)}</td>
            <td>{shown(k.yours)}</td>
            <td class={k.theirs ? 'invalid' : undefined}>
              {shown(k.now)}
              {k.theirs ? ' (changed by someone else)' : ''}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    {conflict.others.length > 0 && <p>Also changed meanwhile (kept as they are): {conflict.others.join(', ')}.</p>}
    <div class="toolbar">
      <button type="button" onClick={onKeep}>
        Put my changes on the current state
      </button>
      <button type="button" onClick={onDiscard}>
        Discard my changes
      </button>
    </div>
    <p class="hint">Putting them back sends nothing: review them, then save again over version {conflict.toVersion}.</p>
  </div>
);

/**
 * A device's state: desired, reported and the delta side by side (each with when it was set), and
 * the desired keys edited with the version they were read at: a change made meanwhile is a 409,
 * shown as a conflict beside the state read again, never overwritten.
 */
export const DeviceStatePanel = ({ api, workspaceId, deviceId }: { api: ApiClient; workspaceId: string; deviceId: string }) => {
  const state = useLoad(() => api.getDeviceState(workspaceId, deviceId), [workspaceId, deviceId]);
  // what the edit began from, and the rows as edited
  const [edit, setEdit] = useState<{ base: DeviceState; rows: DesiredRow[] } | undefined>(undefined);
  const [conflict, setConflict] = useState<Conflict | undefined>(undefined);
  const save = useAction();

  // Read again with the device's health: on its live data or connection messages (at most every
  // 4 s), every 30 s while the live connection is down, and at once on reloadDeviceHealth().
  const soon = useThrottled(state.reload, LIVE_REFRESH_MS);
  const ofThisDevice = (message: { device_id: string } | undefined) => {
    if (!message || message.device_id === deviceId) soon();
  };
  useLive(workspaceId, 'data', ofThisDevice);
  useLive(workspaceId, 'connection', ofThisDevice);
  useEffect(() => {
    const now = () => state.reload();
    addEventListener(STALE_EVENT, now);
    return () => removeEventListener(STALE_EVENT, now);
  }, [workspaceId, deviceId]);

  // The editor follows the state as read, unless the person has changes not saved: those stay, over
  // the version they began from (a save then meets the 409 it should).
  useLayoutEffect(() => {
    if (!state.data) return;
    setEdit((was) =>
      was && was.base.version === state.data!.version
        ? was
        : was && rowsChanged(was.base.desired, was.rows)
          ? was
          : { base: state.data!, rows: desiredRows(state.data!.desired) },
    );
  }, [state.data]);
  useEffect(() => {
    setEdit(undefined);
    setConflict(undefined);
  }, [workspaceId, deviceId]);

  if (state.error && !state.data) return <ErrorBox error={state.error} />;
  if (!state.data || !edit) return <Busy label="Reading the device’s state…" />;
  const { base, rows } = edit;
  const checked = checkDesiredRows(rows);
  const fromApi = desiredErrorsOf(save.error, rows);
  const patch = desiredPatch(base.desired, rows);
  const changed = Object.keys(patch).length > 0;
  const invalid = Object.keys(checked.rows).length > 0 || Boolean(checked.whole);
  const setRows = (next: (rows: DesiredRow[]) => DesiredRow[]) => {
    save.setError(undefined);
    setEdit((was) => was && { ...was, rows: next(was.rows) });
  };
  const reset = (to: DeviceState, rowsNow = desiredRows(to.desired)) => {
    setConflict(undefined);
    save.setError(undefined);
    setEdit({ base: to, rows: rowsNow });
  };
  const s = state.data;
  return (
    <section aria-labelledby="state-h">
      <h3 id="state-h">State</h3>
      <p class="hint">
        What the device should be (desired), what it says it is (reported), and where they differ (the delta). Version{' '}
        <span data-testid="state-version">{s.version}</span>.{' '}
        <button type="button" onClick={state.reload}>
          Refresh state
        </button>
      </p>
      <ErrorBox error={state.error} />
      <StateTable state={s} />

      <form
        class="stack card"
        aria-labelledby="desired-h"
        onSubmit={async (e) => {
          e.preventDefault();
          if (invalid || !changed) return;
          const outcome = await save.run(async () => {
            try {
              return { saved: await api.patchDeviceState(workspaceId, deviceId, patch, base.version) };
            } catch (error) {
              // someone changed the desired state since it was read: nothing was written; read it again and show both
              if (error instanceof ApiError && error.status === 409) return { now: await api.getDeviceState(workspaceId, deviceId) };
              throw error;
            }
          });
          if (outcome?.saved) {
            state.setData(outcome.saved);
            reset(outcome.saved);
          } else if (outcome?.now) {
            setConflict(conflictOf(base, patch, outcome.now));
            state.setData(outcome.now);
          }
        }}
      >
        <h4 id="desired-h">Edit the desired state</h4>
        <p class="hint">
          Each value is JSON: <code>60</code>, <code>"eco"</code>, <code>true</code>, <code>{'{"low": 5}'}</code>. {STATE_KEY_HINT} At most{' '}
          {STATE_DOCUMENT_MAX_BYTES / 1024} KB in all. Saved as one change over version {base.version}: if someone changed it meanwhile, nothing is overwritten.
        </p>
        <div class="tag-rows" data-testid="desired-rows">
          {rows.map((row, i) => {
            const message = checked.rows[i] ?? fromApi.rows[i];
            const errorId = `desired-${i}-error`;
            return (
              <>
                <input
                  name={`desired-key-${i}`}
                  aria-label={`Desired key ${i + 1}`}
                  value={row.key}
                  aria-invalid={Boolean(message)}
                  aria-describedby={message ? errorId : undefined}
                  onInput={(e) => {
                    const key = e.currentTarget.value;
                    setRows((all) => all.map((r, k) => (k === i ? { ...r, key } : r)));
                  }}
                />
                <input
                  name={`desired-value-${i}`}
                  aria-label={`Desired value ${i + 1} (JSON)`}
                  class="mono"
                  spellcheck={false}
                  value={row.text}
                  aria-invalid={Boolean(message)}
                  onInput={(e) => {
                    const text = e.currentTarget.value;
                    setRows((all) => all.map((r, k) => (k === i ? { ...r, text } : r)));
                  }}
                />
                <button type="button" aria-label={`Remove desired key ${row.key || i + 1}`} onClick={() => setRows((all) => all.filter((_, k) => k !== i))}>
                  Remove
                </button>
                {message && (
                  <small id={errorId} class="invalid" data-testid="desired-error">
                    {message}
                  </small>
                )}
              </>
            );
          })}
        </div>
        {!rows.length && <p>No desired keys.</p>}
        <div class="toolbar">
          <button type="button" onClick={() => setRows((all) => [...all, { key: '', text: '', was: '' }])}>
            Add a desired key
          </button>
          <Submit busy={save.busy} disabled={save.busy || invalid || !changed}>
            Save desired state
          </Submit>
          {changed && !save.busy && <span class="hint">Unsaved changes.</span>}
        </div>
        {(checked.whole || fromApi.whole.length > 0) && (
          <div class="error" role="alert">
            <strong>{checked.whole ?? 'The desired state was refused.'}</strong>
            {fromApi.whole.length > 0 && (
              <ul>
                {fromApi.whole.map((line) => (
                  <li>{line}</li>
                ))}
              </ul>
            )}
          </div>
        )}
        {!fromApi.whole.length && !Object.keys(fromApi.rows).length && <ErrorBox error={save.error} />}
        {conflict && (
          <ConflictBox
            conflict={conflict}
            onKeep={() => reset(s, rebasedRows(s.desired, Object.fromEntries(conflict.keys.map((k) => [k.key, k.yours]))))}
            onDiscard={() => reset(s)}
          />
        )}
      </form>
    </section>
  );
};
