import { useState } from 'preact/hooks';
import type { ApiClient, Delivery, Integration, Replay } from '../lib/api';
import { Busy, ErrorBox, useAction, when } from './components';

/** A webhook's health in words, for its card on the list: healthy, or failing since when and how often. */
export const healthText = (status: Integration['status']) => {
  if (status.consecutive_failures === 0) return status.last_delivery_at ? 'Healthy: the last delivery succeeded.' : 'No delivery yet.';
  const times = `${status.consecutive_failures.toLocaleString('en-US')} failed deliver${status.consecutive_failures === 1 ? 'y' : 'ies'} in a row`;
  return status.failing_since ? `Failing since ${when(status.failing_since)}: ${times}.` : `Failing: ${times}.`;
};

/** The health line of a webhook's card (a failing one in the failure colour). */
export const WebhookHealth = ({ integration }: { integration: Integration }) => (
  <p data-testid="webhook-health" class={integration.status.consecutive_failures > 0 ? 'failing' : 'ok'}>
    {healthText(integration.status)}
  </p>
);

const outcomeOf = (d: Delivery) => (d.ok ? `delivered (HTTP ${d.status})` : d.status !== null ? `failed (HTTP ${d.status})` : 'failed (no answer)');

/** A webhook's last deliveries, loaded when opened (and again on Reload): time, outcome, error, duration, batch size. */
export const DeliveryLog = ({ api, workspaceId, integration }: { api: ApiClient; workspaceId: string; integration: Integration }) => {
  const [deliveries, setDeliveries] = useState<Delivery[] | undefined>(undefined);
  const { busy, error, run } = useAction();
  const load = async () => {
    const answer = await run(() => api.listIntegrationDeliveries(workspaceId, integration.id, 20));
    if (answer) setDeliveries(answer);
  };
  return (
    <details
      class="delivery-log"
      onToggle={(e) => {
        if (e.currentTarget.open && deliveries === undefined) void load();
      }}
    >
      <summary>Delivery log of {integration.name}</summary>
      <button type="button" onClick={() => void load()} disabled={busy}>
        Reload the log
      </button>
      {busy && <Busy label="Loading deliveries…" />}
      <ErrorBox error={error} />
      {deliveries?.length === 0 && <p>No delivery in the last 7 days.</p>}
      {deliveries && deliveries.length > 0 && (
        <table class="list" data-testid="delivery-log">
          <caption class="sr-only">The last deliveries of {integration.name}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Outcome</th>
              <th scope="col">Error</th>
              <th scope="col">Duration</th>
              <th scope="col">Batch</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr class={d.ok ? undefined : 'failing'}>
                <td>{when(d.at)}</td>
                <td>
                  {outcomeOf(d)}
                  {d.test ? ' · test' : ''}
                </td>
                <td>{d.error ?? '—'}</td>
                <td>{d.duration_ms.toLocaleString('en-US')} ms</td>
                <td>
                  {d.entries.toLocaleString('en-US')} {d.kind === 'data' ? 'point' : 'event'}
                  {d.entries === 1 ? '' : 's'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
};

const replayText = (r: Replay) =>
  `${r.moved.toLocaleString('en-US')} message${r.moved === 1 ? '' : 's'} moved back to the forward queue (of ${r.examined.toLocaleString('en-US')} in the dead-letter queue looked at).` +
  (r.complete ? '' : ' The replay stopped at its time bound: replay again for the rest.');

/**
 * "Replay missed deliveries": moves the dead-lettered messages the webhook missed back to the
 * forward queue (POST …/replay), then says how many.
 */
export const ReplayButton = ({
  api,
  workspaceId,
  integration,
  onReplayed,
}: {
  api: ApiClient;
  workspaceId: string;
  integration: Integration;
  onReplayed: (updated: Integration) => void;
}) => {
  const { busy, error, run } = useAction();
  const [report, setReport] = useState<string | undefined>(undefined);
  return (
    <div class="toolbar">
      <button
        type="button"
        disabled={busy || !integration.enabled}
        aria-busy={busy}
        aria-label={`Replay missed deliveries of ${integration.name}`}
        title={integration.enabled ? undefined : 'Enable the webhook first'}
        onClick={async () => {
          setReport(undefined);
          const answer = await run(() => api.replayIntegration(workspaceId, integration.id));
          if (!answer) return;
          setReport(replayText(answer.replay));
          onReplayed(answer.integration);
        }}
      >
        Replay missed deliveries
      </button>
      {busy && <Busy label={`Replaying what ${integration.name} missed…`} />}
      <p role="status" data-testid="replay-result">
        {report}
      </p>
      <ErrorBox error={error} />
    </div>
  );
};
