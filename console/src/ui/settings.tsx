import { useState } from 'preact/hooks';
import { pointsStoredBefore, retentionCut } from '../lib/guards';
import { localInputToIso } from '../lib/json-input';
import { lastDays } from '../lib/usage';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, SecretOnce, Submit, useAction, useLoad, when } from './components';
import { useConfirm } from './confirm';

const USAGE_DAYS_MAX = 366;

/**
 * The confirmation of a retention cut: from when points stop being answered, how many days of them,
 * and about how many points arrived on those days (the usage counts, by arrival day).
 */
const retentionConsequence = async (api: PageProps['api'], workspaceId: string, current: number | null, next: number) => {
  const cut = retentionCut(current, next)!;
  const span = Math.min(USAGE_DAYS_MAX, current ?? USAGE_DAYS_MAX);
  // an estimate: a usage read that fails leaves the count out, not the confirmation
  const stored = await api
    .getUsage(workspaceId, lastDays(span))
    .then((usage) => pointsStoredBefore(usage.days, cut.cutoff))
    .catch(() => undefined);
  return {
    title: `Keep data points ${next} day${next === 1 ? '' : 's'} instead of ${current === null ? 'forever' : `${current} days`}?`,
    consequence: (
      <>
        <p data-testid="retention-loss">
          Points with a device time before {when(cut.cutoff)} stop being answered at once
          {cut.lostDays === null ? ': every point older than that.' : `: ${cut.lostDays} days of data.`}
          {stored !== undefined && ` About ${stored.toLocaleString('en-US')} points were stored on those days (last ${span} days, by arrival day).`}
        </p>
        <p>The store deletes them within days; they cannot be read again, even if you raise the retention later.</p>
      </>
    ),
    confirmLabel: `Cut retention to ${next} day${next === 1 ? '' : 's'}`,
  };
};

/** How long the workspace keeps its data points: days after their device time, or forever (an empty field). */
const RetentionSection = ({ api, workspaceId }: Pick<PageProps, 'api' | 'workspaceId'>) => {
  const workspace = useLoad(() => api.getWorkspace(workspaceId), [workspaceId]);
  const [days, setDays] = useState<string | undefined>(undefined);
  const save = useAction();
  const confirm = useConfirm();
  const current = workspace.data?.data_retention_days ?? null;
  // the field follows the loaded workspace until the person types
  const shown = days ?? (current === null ? '' : String(current));
  return (
    <section aria-labelledby="retention-h">
      <h2 id="retention-h">Settings: data retention</h2>
      <p data-testid="retention-status">
        {workspace.data === undefined
          ? ''
          : current === null
            ? 'Data points are kept forever.'
            : `Data points are kept ${current} days after their device time: older ones are no longer answered, and the store deletes them within days.`}
      </p>
      <ErrorBox error={workspace.error} />
      <form
        class="inline"
        aria-labelledby="retention-h"
        onSubmit={async (e) => {
          e.preventDefault();
          const value = shown.trim() === '' ? null : Number(shown);
          if (value !== null && retentionCut(current, value) && !(await confirm.ask(await retentionConsequence(api, workspaceId, current, value)))) return;
          const updated = await save.run(() => api.updateWorkspace(workspaceId, { data_retention_days: value }));
          if (updated) {
            workspace.setData(updated);
            setDays(undefined);
          }
        }}
      >
        <Field
          label="Keep data points (days)"
          hint="1 to 3650 days after each point’s device time; empty: forever. Applies to the points already stored at once"
        >
          <input type="number" name="retention-days" min={1} max={3650} step={1} value={shown} onInput={(e) => setDays(e.currentTarget.value)} />
        </Field>
        <Submit busy={save.busy}>Save retention</Submit>
        <ErrorBox error={save.error} />
      </form>
      {confirm.dialog}
    </section>
  );
};

/** A workspace's Settings: its data retention, and its API keys (create with a name, shown once; list; revoke), as the interface describes. */
export const SettingsPage = ({ api, workspaceId, navigate, onWorkspaceDeleted }: PageProps & { onWorkspaceDeleted?: () => void }) => (
  <>
    <RetentionSection api={api} workspaceId={workspaceId} />
    <ApiKeysSection api={api} workspaceId={workspaceId} />
    <DeleteWorkspaceSection api={api} workspaceId={workspaceId} navigate={navigate} onDeleted={onWorkspaceDeleted} />
  </>
);

/** What a 409 of a workspace's delete means. */
const WORKSPACE_IN_USE = 'The workspace still holds devices: delete them (or move them to another workspace’s fleets) first, then delete the workspace.';

/** Deletes the workspace when it holds no device, after a confirmation that names it and what goes with it. */
const DeleteWorkspaceSection = ({ api, workspaceId, navigate, onDeleted }: PageProps & { onDeleted?: () => void }) => {
  const remove = useAction();
  const confirm = useConfirm();
  return (
    <section aria-labelledby="ws-delete-h">
      <h2 id="ws-delete-h">Settings: delete this workspace</h2>
      <p>Only a workspace without devices can be deleted; its fleets, API keys, integrations, groups, firmware images, exports and data go with it.</p>
      <button
        type="button"
        class="danger"
        disabled={remove.busy}
        onClick={async () => {
          // its name as it is now, for the question
          const workspace = await remove.run(() => api.getWorkspace(workspaceId));
          if (!workspace) return;
          const name = workspace.name;
          const sure = await confirm.ask({
            title: `Delete workspace ${name}?`,
            consequence: (
              <p data-testid="ws-delete-consequence">
                The workspace <strong>{name}</strong> (<code>{workspaceId}</code>) is deleted for good, with its fleets, API keys (every program using them is
                refused), integrations, groups, firmware images, exports and data points. While it holds devices the delete is refused and nothing changes.
              </p>
            ),
            confirmLabel: 'Delete the workspace',
          });
          if (!sure) return;
          if (await remove.run(() => api.deleteWorkspace(workspaceId))) {
            onDeleted?.();
            navigate({ page: 'workspaces' });
          }
        }}
      >
        Delete workspace
      </button>
      <ErrorBox error={remove.error} hints={{ 409: WORKSPACE_IN_USE }} />
      {confirm.dialog}
    </section>
  );
};

/** The workspace's API keys. */
const ApiKeysSection = ({ api, workspaceId }: Pick<PageProps, 'api' | 'workspaceId'>) => {
  const keys = useLoad(() => api.listApiKeys(workspaceId), [workspaceId]);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [secret, setSecret] = useState<{ label: string; value: string } | undefined>(undefined);
  const create = useAction();
  const revoke = useAction();
  const confirm = useConfirm();
  return (
    <section aria-labelledby="keys-h">
      {confirm.dialog}
      <h2 id="keys-h">Settings: API keys</h2>
      <p>An API key reaches every workspace of your account; it is bound to this one (listed first when it lists workspaces).</p>
      <form
        class="inline"
        aria-labelledby="key-new"
        onSubmit={async (e) => {
          e.preventDefault();
          const created = await create.run(() => api.createApiKey(workspaceId, name.trim(), localInputToIso(expires)));
          if (created) {
            setSecret({ label: `API key ${created.api_key.name}`, value: created.key });
            setName('');
            setExpires('');
            keys.reload();
          }
        }}
      >
        <h3 id="key-new">New API key</h3>
        <Field label="Key name">
          <input name="key-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Expires (optional, local time)">
          <input type="datetime-local" name="key-expires" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        </Field>
        <Submit busy={create.busy}>Create API key</Submit>
        <ErrorBox error={create.error} />
      </form>
      {secret && <SecretOnce label={secret.label} secret={secret.value} onDismiss={() => setSecret(undefined)} />}
      <ErrorBox error={keys.error ?? revoke.error} />
      {keys.loading && <Busy label="Loading API keys…" />}
      <table class="list" data-testid="api-keys">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">ID</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Revoked</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.map((k) => (
            <tr>
              <td>
                <Name text={k.name} />
              </td>
              <td>
                <code>{k.id}</code>
              </td>
              <td>{when(k.created_at)}</td>
              <td>{k.expires_at ? when(k.expires_at) : 'never'}</td>
              <td>{when(k.revoked_at)}</td>
              <td>
                {!k.revoked_at && (
                  <button
                    type="button"
                    aria-label={`Revoke API key ${k.name}`}
                    disabled={revoke.busy}
                    onClick={async () => {
                      const sure = await confirm.ask({
                        title: `Revoke the API key ${k.name}?`,
                        consequence: (
                          <p>
                            Every program and script using <code>{k.id}</code> is refused from now on (after at most the authorizer’s cache time). A revoked key
                            cannot be restored: a new key has a new secret.
                          </p>
                        ),
                        confirmLabel: 'Revoke the key',
                      });
                      if (!sure) return;
                      if (await revoke.run(() => api.revokeApiKey(workspaceId, k.id))) keys.reload();
                    }}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
};
