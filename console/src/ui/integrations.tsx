import { useState } from 'preact/hooks';
import type { Integration } from '../lib/api';
import { parseList } from '../lib/json-input';
import { describeTestDelivery, type DeliveryReport } from '../lib/webhooks';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, SecretOnce, Submit, useAction, useLoad, when } from './components';
import { useConfirm } from './confirm';
import { DeliveryLog, ReplayButton, WebhookHealth } from './webhook-health';
import { useLive, useThrottled } from './live';

/**
 * Webhooks: create, enable or disable, tag filter, health (failing since, failures in a row, last
 * error), delivery log, DLQ replay, send a test delivery, rotate the secret, delete (confirmed).
 */
export const IntegrationsPage = ({ api, workspaceId }: PageProps) => {
  const list = useLoad(() => api.listIntegrations(workspaceId), [workspaceId]);
  // A delivery status written (or a reconnection) reads the list again, at most every 2 s.
  const reread = useThrottled(list.reload, 2_000);
  useLive(workspaceId, 'webhook', reread);
  const [secret, setSecret] = useState<{ label: string; value: string } | undefined>(undefined);
  const act = useAction();
  const confirm = useConfirm();
  /** Reads the list again: what the live layer (webhook status messages) calls, and Refresh. */
  const reload = list.reload;
  const replace = (updated: Integration) => list.setData((all) => all?.map((i) => (i.id === updated.id ? updated : i)));

  return (
    <>
      <section aria-labelledby="int-h">
        <h2 id="int-h">Webhooks</h2>
        <p>
          Each webhook gets signed batches of data points and/or events (at least once). “Send test delivery” posts one signed batch marked as a test (header{' '}
          <code>x-fleetstream-test</code>, batch ID starting with <code>test-</code>) right away, even to a disabled webhook, and shows how it went; the result
          also appears as the webhook’s last delivery or last error.
        </p>
        {secret && <SecretOnce label={secret.label} secret={secret.value} onDismiss={() => setSecret(undefined)} />}
        <ErrorBox error={list.error ?? act.error} />
        {list.loading && <Busy label="Loading webhooks…" />}
        <button type="button" onClick={reload}>
          Refresh status
        </button>
        {confirm.dialog}
        {list.data?.map((i) => (
          <article class="card" aria-labelledby={`int-${i.id}`} data-testid="integration">
            <h3 id={`int-${i.id}`}>
              <Name text={i.name} wide /> <code>{i.id}</code> {i.enabled ? '' : '(disabled)'}
            </h3>
            <WebhookHealth integration={i} />
            <dl class="facts">
              <dt>URL</dt>
              <dd>
                <Name text={i.url} wide />
              </dd>
              <dt>Sends</dt>
              <dd>{[i.data && 'data points', i.events && 'events'].filter(Boolean).join(' and ')}</dd>
              <dt>Last delivery</dt>
              <dd data-testid="last-delivery">{when(i.status.last_delivery_at)}</dd>
              <dt>Last error</dt>
              <dd data-testid="last-error">{i.status.last_error ? `${i.status.last_error} (${when(i.status.last_error_at)})` : '—'}</dd>
              <dt>Failures since the last success</dt>
              <dd data-testid="consecutive-failures">{i.status.consecutive_failures}</dd>
              <dt>Failing since</dt>
              <dd data-testid="failing-since">{when(i.status.failing_since)}</dd>
              {i.previous_secret_expires_at && (
                <>
                  <dt>Previous secret signs until</dt>
                  <dd>{when(i.previous_secret_expires_at)}</dd>
                </>
              )}
            </dl>
            <SendTest api={api} workspaceId={workspaceId} integration={i} onTested={replace} />
            <ReplayButton api={api} workspaceId={workspaceId} integration={i} onReplayed={replace} />
            <DeliveryLog api={api} workspaceId={workspaceId} integration={i} />
            <TagFilter
              integration={i}
              onSave={async (tags) => {
                const updated = await act.run(() => api.updateIntegration(workspaceId, i.id, { tags }));
                if (updated) replace(updated);
              }}
            />
            <div class="toolbar">
              <button
                type="button"
                disabled={act.busy}
                onClick={async () => {
                  const updated = await act.run(() => api.updateIntegration(workspaceId, i.id, { enabled: !i.enabled }));
                  if (updated) replace(updated);
                }}
              >
                {i.enabled ? 'Disable' : 'Enable'} {i.name}
              </button>
              <button
                type="button"
                disabled={act.busy}
                onClick={async () => {
                  const sure = await confirm.ask({
                    title: `Issue a new signing secret for ${i.name}?`,
                    consequence: (
                      <p>
                        The new secret is shown once. The old one keeps signing beside it for 24 hours, then receivers that still check only the old one refuse
                        every POST.
                      </p>
                    ),
                    confirmLabel: 'Rotate the secret',
                  });
                  if (!sure) return;
                  const answer = await act.run(() => api.rotateIntegrationSecret(workspaceId, i.id));
                  if (answer) {
                    replace(answer.integration);
                    setSecret({ label: `New signing secret of ${i.name}`, value: answer.secret });
                  }
                }}
              >
                Rotate secret
              </button>
              <button
                type="button"
                disabled={act.busy}
                onClick={async () => {
                  const sure = await confirm.ask({
                    title: `Delete the webhook ${i.name}?`,
                    consequence: (
                      <p>
                        It stops receiving at once: queued and dead-lettered points and events are no longer sent to {i.url}, its delivery log goes with it, and
                        its secret cannot be recovered. A new webhook gets a new ID and secret.
                      </p>
                    ),
                    confirmLabel: 'Delete the webhook',
                  });
                  if (!sure) return;
                  if ((await act.run(() => api.deleteIntegration(workspaceId, i.id).then(() => true))) !== undefined) list.reload();
                }}
              >
                Delete
              </button>
            </div>
          </article>
        ))}
      </section>
      <CreateIntegration
        api={api}
        workspaceId={workspaceId}
        onCreated={(created, value) => {
          setSecret({ label: `Signing secret of ${created.name}`, value });
          list.reload();
        }}
      />
    </>
  );
};

/**
 * "Send test delivery": one signed test batch now, with progress while the receiver is waited for
 * (up to the webhook timeout), then the outcome in words and the webhook's updated status.
 */
const SendTest = ({
  api,
  workspaceId,
  integration,
  onTested,
}: Pick<PageProps, 'api' | 'workspaceId'> & { integration: Integration; onTested: (updated: Integration) => void }) => {
  const { busy, error, run } = useAction();
  const [report, setReport] = useState<DeliveryReport | undefined>(undefined);
  return (
    <div class="toolbar">
      <button
        type="button"
        disabled={busy}
        aria-busy={busy}
        aria-label={`Send test delivery to ${integration.name}`}
        onClick={async () => {
          setReport(undefined);
          const answer = await run(() => api.testIntegration(workspaceId, integration.id));
          if (!answer) return;
          setReport(describeTestDelivery(answer.delivery, integration.url));
          onTested(answer.integration);
        }}
      >
        Send test delivery
      </button>
      {busy && <Busy label={`Sending a test delivery to ${integration.name}…`} />}
      {/* always present, so that screen readers announce the outcome when it is written */}
      <p role="status" data-testid="test-result" class={report ? (report.ok ? 'ok' : 'invalid') : undefined}>
        {report?.text}
      </p>
      <ErrorBox error={error} />
    </div>
  );
};

const TagFilter = ({ integration, onSave }: { integration: Integration; onSave: (tags: string[]) => Promise<void> }) => {
  const [tags, setTags] = useState(integration.tags.join(', '));
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        void onSave(parseList(tags));
      }}
    >
      <Field label={`Tag filter of ${integration.name}`} hint="Only data points with one of these tags; empty: all">
        <input name="integration-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
      </Field>
      <button type="submit">Save tags</button>
    </form>
  );
};

const CreateIntegration = ({
  api,
  workspaceId,
  onCreated,
}: Pick<PageProps, 'api' | 'workspaceId'> & { onCreated: (i: Integration, secret: string) => void }) => {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [data, setData] = useState(true);
  const [events, setEvents] = useState(true);
  const [tags, setTags] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="inline"
      aria-labelledby="int-new"
      onSubmit={async (e) => {
        e.preventDefault();
        const created = await run(() =>
          api.createIntegration(workspaceId, { name: name.trim() || 'webhook', url: url.trim(), data, events, tags: parseList(tags) }),
        );
        if (created) {
          setName('');
          setUrl('');
          setTags('');
          onCreated(created.integration, created.secret);
        }
      }}
    >
      <h2 id="int-new">New webhook</h2>
      <Field label="Webhook name">
        <input name="integration-name" maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="URL" hint="https to a public address">
        <input type="url" name="integration-url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
      </Field>
      <label>
        <input type="checkbox" name="integration-data" checked={data} onChange={(e) => setData(e.currentTarget.checked)} /> Send data points
      </label>
      <label>
        <input type="checkbox" name="integration-events" checked={events} onChange={(e) => setEvents(e.currentTarget.checked)} /> Send events
      </label>
      <Field label="Tags" hint="Empty: all tags">
        <input name="integration-new-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
      </Field>
      <Submit busy={busy}>Create webhook</Submit>
      <ErrorBox error={error} />
    </form>
  );
};
