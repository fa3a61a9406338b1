import { useState } from 'preact/hooks';
import { localInputToIso } from '../lib/json-input';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, SecretOnce, Submit, useAction, useLoad, when } from './components';

/** A workspace's Settings: its API keys (create with a name, shown once; list; revoke), as the interface describes. */
export const SettingsPage = ({ api, workspaceId }: PageProps) => {
  const keys = useLoad(() => api.listApiKeys(workspaceId), [workspaceId]);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [secret, setSecret] = useState<{ label: string; value: string } | undefined>(undefined);
  const create = useAction();
  const revoke = useAction();
  return (
    <section aria-labelledby="keys-h">
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
              <td>{k.name}</td>
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
                      if (!confirm(`Revoke the API key ${k.name}? Programs using it stop working.`)) return;
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
