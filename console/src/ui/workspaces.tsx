import { useState } from 'preact/hooks';
import type { ApiClient, Workspace } from '../lib/api';
import { routeHash } from '../lib/router';
import { ErrorBox, Field, Name, Submit, useAction, when } from './components';
import { navigate } from './page';

/** The account's workspaces: list, create, and open one (switch). */
export const WorkspacesPage = ({ api, workspaces, reload }: { api: ApiClient; workspaces: Workspace[] | undefined; reload: () => void }) => {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const { busy, error, run } = useAction();
  const create = async (e: Event) => {
    e.preventDefault();
    const workspace = await run(() => api.createWorkspace(name.trim(), description));
    if (workspace) {
      setName('');
      setDescription('');
      reload();
      navigate({ page: 'devices', workspaceId: workspace.id });
    }
  };
  return (
    <section aria-labelledby="ws-h">
      <h1 id="ws-h">Workspaces</h1>
      {workspaces && (
        <table class="list">
          <caption class="sr-only">Your workspaces</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">ID</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {workspaces.map((w) => (
              <tr>
                <td>
                  <a href={routeHash({ page: 'overview', workspaceId: w.id })}>
                    <Name text={w.name} />
                  </a>
                </td>
                <td>
                  <Name text={w.description} />
                </td>
                <td>
                  <code>{w.id}</code>
                </td>
                <td>{when(w.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form onSubmit={create} class="inline" aria-labelledby="ws-new">
        <h2 id="ws-new">New workspace</h2>
        <Field label="Name">
          <input name="workspace-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input name="workspace-description" maxLength={1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <Submit busy={busy}>Create workspace</Submit>
        <ErrorBox error={error} />
      </form>
    </section>
  );
};
