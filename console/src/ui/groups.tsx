import { useLayoutEffect, useState } from 'preact/hooks';
import type { ApiClient, Device, Group } from '../lib/api';
import { queryProblem, tagsText } from '../lib/find';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Pager, Submit, useAction, useLoad, usePages, VirtualTable, when, type Column } from './components';
import { useConfirm } from './confirm';
import { QueryField } from './query-box';

const PAGE = 50;

/** What a 409 of a group's delete means. */
const GROUP_IN_USE = 'A continuous rollout or an alarm rule targets this group: cancel the rollout (or change the rule) first, then delete the group.';

/** A page of groups, each with its device count (read one by one: the list does not count). */
const loadGroups = async (api: ApiClient, workspaceId: string, cursor: string | undefined) => {
  const page = await api.listGroups(workspaceId, { limit: PAGE, cursor });
  const counted = await Promise.all(page.items.map((g) => api.getGroup(workspaceId, g.id).catch(() => g)));
  return { items: counted, next: page.next };
};

/** Asks before a group's delete, naming it and saying what stays. */
const useDeleteGroup = (api: ApiClient, workspaceId: string) => {
  const confirm = useConfirm();
  const action = useAction();
  const remove = async (group: Group) => {
    const sure = await confirm.ask({
      title: `Delete group ${group.name}?`,
      consequence: (
        <p>
          The saved query <code>{group.query}</code> is deleted. Its devices stay as they are; rollouts already scheduled on it keep their devices. While a
          continuous rollout or an alarm rule targets it, the delete is refused.
        </p>
      ),
      confirmLabel: 'Delete the group',
    });
    return sure ? Boolean(await action.run(() => api.deleteGroup(workspaceId, group.id))) : false;
  };
  return { remove, busy: action.busy, error: action.error, dialog: confirm.dialog };
};

/** Groups (saved queries): list with their device counts, create, delete. */
export const GroupsPage = ({ api, workspaceId, navigate }: PageProps) => {
  const pages = usePages(workspaceId);
  const groups = useLoad(() => loadGroups(api, workspaceId, pages.cursor), [workspaceId, pages.cursor]);
  const del = useDeleteGroup(api, workspaceId);
  return (
    <>
      <section aria-labelledby="groups-h">
        <h2 id="groups-h">Groups</h2>
        <p class="hint">
          A group is a saved query: its devices are those that match it now. Make one from a search on the{' '}
          <a href={routeHash({ page: 'devices', workspaceId })}>devices list</a> (Save as group) or below; schedule jobs and FOTA on it.
        </p>
        <ErrorBox error={groups.error} />
        <ErrorBox error={del.error} hints={{ 409: GROUP_IN_USE }} />
        {groups.loading && !groups.data && <Busy label="Loading groups…" />}
        {groups.data && !groups.data.items.length && pages.first && <p>No group yet.</p>}
        {groups.data && groups.data.items.length > 0 && (
          <table class="list" data-testid="groups">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Query</th>
                <th scope="col">Devices</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {groups.data.items.map((g) => (
                <tr data-group={g.name}>
                  <td>
                    <a href={routeHash({ page: 'group', workspaceId, groupId: g.id })}>
                      <Name text={g.name} />
                    </a>
                  </td>
                  <td>
                    <code>{g.query}</code>
                  </td>
                  <td data-testid="group-count">{g.device_count ?? '…'}</td>
                  <td>{when(g.created_at)}</td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Delete group ${g.name}`}
                      disabled={del.busy}
                      onClick={async () => {
                        if (await del.remove(g)) groups.reload();
                      }}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pager pages={pages} next={groups.data?.next} onRefresh={groups.reload} />
        {del.dialog}
      </section>
      <GroupForm api={api} workspaceId={workspaceId} onSaved={(g) => navigate({ page: 'group', workspaceId, groupId: g.id })} />
    </>
  );
};

/** A group's name and query, new or edited; the query's 400 is shown under it with the character it names. */
const GroupForm = ({ api, workspaceId, group, onSaved }: { api: ApiClient; workspaceId: string; group?: Group; onSaved: (g: Group) => void }) => {
  const [name, setName] = useState(group?.name ?? '');
  const [query, setQuery] = useState(group?.query ?? '');
  const [sent, setSent] = useState('');
  const save = useAction();
  useLayoutEffect(() => {
    setName(group?.name ?? '');
    setQuery(group?.query ?? '');
  }, [group]);
  const problem = queryProblem(save.error);
  const prefix = group ? 'edit-group' : 'new-group';
  return (
    <form
      class="stack card"
      aria-labelledby={`${prefix}-h`}
      onSubmit={async (e) => {
        e.preventDefault();
        const body = { name: name.trim(), query: query.trim() };
        setSent(body.query);
        const saved = await save.run(() => (group ? api.updateGroup(workspaceId, group.id, body) : api.createGroup(workspaceId, body)));
        if (saved) onSaved(saved);
      }}
    >
      <h3 id={`${prefix}-h`}>{group ? 'Rename or change the query' : 'New group'}</h3>
      <Field label="Group name">
        <input name={`${prefix}-name`} required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <QueryField name={`${prefix}-query`} label="Query" value={query} onInput={setQuery} problem={problem} problemQuery={sent} required />
      <Submit busy={save.busy}>{group ? 'Save the group' : 'Create group'}</Submit>
      {!problem && <ErrorBox error={save.error} />}
    </form>
  );
};

const COLUMNS = (workspaceId: string): Column<Device, 'name' | 'fleet_name' | 'tags' | 'connected'>[] => [
  {
    key: 'name',
    title: 'Name',
    width: '2fr',
    render: (d) => (
      <a href={routeHash({ page: 'device', workspaceId, deviceId: d.id })} title={d.name}>
        {d.name}
      </a>
    ),
  },
  { key: 'fleet_name', title: 'Fleet', width: '1.2fr', render: (d) => <span title={d.fleet_name}>{d.fleet_name}</span> },
  { key: 'tags', title: 'Tags', width: '2fr', render: (d) => <span title={tagsText(d.tags)}>{tagsText(d.tags) || '—'}</span> },
  { key: 'connected', title: 'Connection', width: '1fr', render: (d) => (d.connected ? 'connected' : 'offline') },
];

/** One group: its query and device count, edit and delete, its devices now, and where to schedule on it. */
export const GroupPage = ({ api, workspaceId, groupId, navigate }: PageProps & { groupId: string }) => {
  const group = useLoad(() => api.getGroup(workspaceId, groupId), [workspaceId, groupId]);
  const devices = useLoad(() => api.listGroupDevices(workspaceId, groupId), [workspaceId, groupId]);
  const del = useDeleteGroup(api, workspaceId);
  if (group.error) return <ErrorBox error={group.error} />;
  if (!group.data) return <Busy label="Loading the group…" />;
  const g = group.data;
  return (
    <>
      <p>
        <a href={routeHash({ page: 'groups', workspaceId })}>← All groups</a>
      </p>
      <h2>
        Group <Name text={g.name} wide /> <code>{g.id}</code>
      </h2>
      <dl class="facts">
        <dt>Query</dt>
        <dd>
          <code data-testid="group-query">{g.query}</code>
        </dd>
        <dt>Devices that match now</dt>
        <dd data-testid="group-device-count">{g.device_count ?? '…'}</dd>
        <dt>Created</dt>
        <dd>{when(g.created_at)}</dd>
        <dt>Last change</dt>
        <dd>{when(g.updated_at)}</dd>
      </dl>
      <div class="toolbar">
        <a href={routeHash({ page: 'jobs', workspaceId, group: g.id })}>Schedule a job or FOTA on this group</a>
        <a href={routeHash({ page: 'devices', workspaceId, q: g.query })}>Open as a search</a>
        <button
          type="button"
          onClick={() => {
            group.reload();
            devices.reload();
          }}
        >
          Refresh
        </button>
        <button
          type="button"
          class="danger"
          disabled={del.busy}
          onClick={async () => {
            if (await del.remove(g)) navigate({ page: 'groups', workspaceId });
          }}
        >
          Delete group
        </button>
      </div>
      <ErrorBox error={del.error} hints={{ 409: GROUP_IN_USE }} />
      {del.dialog}
      <GroupForm
        api={api}
        workspaceId={workspaceId}
        group={g}
        onSaved={() => {
          group.reload();
          devices.reload();
        }}
      />
      <section aria-labelledby="group-devices-h">
        <h3 id="group-devices-h">Its devices</h3>
        <ErrorBox error={devices.error} />
        {devices.loading && <Busy label="Loading the devices…" />}
        {devices.data && (
          <>
            <p role="status" data-testid="group-devices-count">
              {devices.data.length} devices
            </p>
            <VirtualTable label="Devices of the group" rows={devices.data} columns={COLUMNS(workspaceId)} rowKey={(d) => d.id} />
          </>
        )}
      </section>
    </>
  );
};
