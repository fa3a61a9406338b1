import { useLayoutEffect, useMemo, useState } from 'preact/hooks';
import type { Device, Fleet } from '../lib/api';
import { defaultFleetId, queryProblem, tagsText } from '../lib/find';
import { withConnection } from '../lib/live';
import { routeHash } from '../lib/router';
import { filterRows, sortRows, toggleSort, type SortSpec } from '../lib/table';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Submit, useAction, useLoad, VirtualTable, when, type Column } from './components';
import { useConfirm } from './confirm';
import { useLive } from './live';
import { QueryField } from './query-box';

/** What a 409 of a fleet's delete means. */
const FLEET_IN_USE = 'The fleet still holds devices: move them to another fleet or delete them, then delete the fleet.';

type DeviceColumn = 'name' | 'id' | 'fleet_name' | 'tags' | 'connected' | 'last_connected_at' | 'created_at';

const deviceValue = (d: Device, key: DeviceColumn): unknown => (key === 'connected' ? Boolean(d.connected) : key === 'tags' ? tagsText(d.tags) : d[key]);

/**
 * Fleets (list, create, delete an empty one) and the workspace's devices (found by a query of the
 * API's language, kept in the address; filtered, sorted, created), fast with 10,000 devices.
 */
export const DevicesPage = ({ api, workspaceId, navigate, q = '' }: PageProps & { q?: string }) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const devices = useLoad(() => api.listDevices(workspaceId, undefined, q), [workspaceId, q]);
  // Connections show as they happen; after a reconnection (or every 30 s while it is down) the list is read again.
  useLive(workspaceId, 'connection', (message) => (message ? devices.setData((list) => list?.map((d) => withConnection(d, message))) : devices.reload()));
  const [search, setSearch] = useState('');
  const [fleetFilter, setFleetFilter] = useState('');
  const [sort, setSort] = useState<SortSpec<DeviceColumn> | undefined>({ key: 'name', direction: 'asc' });
  const shown = useMemo(() => {
    const inFleet = fleetFilter ? (devices.data ?? []).filter((d) => d.fleet_id === fleetFilter) : (devices.data ?? []);
    return sortRows(
      filterRows(inFleet, search, (d) => [d.name, d.id, d.fleet_name, d.phys_id, tagsText(d.tags)]),
      sort,
      deviceValue,
    );
  }, [devices.data, search, sort, fleetFilter]);

  // the query box follows the address (a shared link, Back) until the person types
  const [queryText, setQueryText] = useState(q);
  useLayoutEffect(() => setQueryText(q), [q]);
  const problem = queryProblem(devices.error);

  const perFleet = useMemo(() => {
    const counts = new Map<string, number>();
    for (const d of devices.data ?? []) counts.set(d.fleet_id, (counts.get(d.fleet_id) ?? 0) + 1);
    return counts;
  }, [devices.data]);

  const defaultFleet = defaultFleetId(fleets.data ?? []);
  const fleetDelete = useConfirm();
  const fleetRemove = useAction();
  const deleteFleet = async (f: Fleet) => {
    const sure = await fleetDelete.ask({
      title: `Delete fleet ${f.name}?`,
      consequence: (
        <p>
          The fleet <strong>{f.name}</strong> (<code>{f.id}</code>) is deleted. Only an empty fleet can be: while it holds devices the delete is refused, and
          nothing changes.
        </p>
      ),
      confirmLabel: 'Delete the fleet',
    });
    if (sure && (await fleetRemove.run(() => api.deleteFleet(workspaceId, f.id)))) fleets.reload();
  };

  const columns: Column<Device, DeviceColumn>[] = [
    {
      key: 'name',
      title: 'Name',
      width: '2fr',
      sortable: true,
      render: (d) => (
        <a href={routeHash({ page: 'device', workspaceId, deviceId: d.id })} title={d.name}>
          {d.name}
        </a>
      ),
    },
    { key: 'id', title: 'ID', width: '2fr', sortable: true, render: (d) => <code>{d.id}</code> },
    { key: 'fleet_name', title: 'Fleet', width: '1.2fr', sortable: true, render: (d) => <span title={d.fleet_name}>{d.fleet_name}</span> },
    { key: 'tags', title: 'Tags', width: '1.8fr', sortable: true, render: (d) => <span title={tagsText(d.tags)}>{tagsText(d.tags) || '—'}</span> },
    { key: 'connected', title: 'Connection', width: '1fr', sortable: true, render: (d) => (d.connected ? 'connected' : 'offline') },
    { key: 'last_connected_at', title: 'Last connected', width: '1.5fr', sortable: true, render: (d) => when(d.last_connected_at) },
    { key: 'created_at', title: 'Created', width: '1.5fr', sortable: true, render: (d) => when(d.created_at) },
  ];

  return (
    <>
      <section aria-labelledby="fleets-h">
        <h2 id="fleets-h">Fleets</h2>
        <ErrorBox error={fleets.error} />
        {fleets.loading && !fleets.data && <Busy label="Loading fleets…" />}
        {fleetDelete.dialog}
        <ErrorBox error={fleetRemove.error} hints={{ 409: FLEET_IN_USE }} />
        {fleets.data && (
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
                <th scope="col">ID</th>
                <th scope="col">Devices</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {fleets.data.map((f) => (
                <tr>
                  <td>
                    <Name text={f.name} />
                  </td>
                  <td>
                    <Name text={f.description} />
                  </td>
                  <td>
                    <code>{f.id}</code>
                  </td>
                  <td>{devices.data ? `${perFleet.get(f.id) ?? 0}${q ? ' that match' : ''}` : '…'}</td>
                  <td>
                    {f.id !== defaultFleet && (
                      <button type="button" aria-label={`Delete fleet ${f.name}`} disabled={fleetRemove.busy} onClick={() => deleteFleet(f)}>
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <CreateFleet {...{ api, workspaceId }} onCreated={fleets.reload} />
      </section>
      <section aria-labelledby="devices-h">
        <h2 id="devices-h">Devices</h2>
        <form
          class="stack"
          role="search"
          aria-label="Find devices"
          onSubmit={(e) => {
            e.preventDefault();
            navigate({ page: 'devices', workspaceId, q: queryText.trim() || undefined });
          }}
        >
          <QueryField name="device-query" label="Find devices (query)" value={queryText} onInput={setQueryText} problem={problem} problemQuery={q} />
          <div class="toolbar">
            <button type="submit">Search</button>
            {q && (
              <button type="button" onClick={() => navigate({ page: 'devices', workspaceId })}>
                Clear the query
              </button>
            )}
          </div>
        </form>
        {q && devices.data && <SaveAsGroup {...{ api, workspaceId, navigate }} query={q} />}
        <div class="toolbar">
          <Field label="Filter the list">
            <input type="search" name="device-search" placeholder="name, ID, fleet, tag" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
          </Field>
          <Field label="Fleet">
            <select name="fleet-filter" value={fleetFilter} onChange={(e) => setFleetFilter(e.currentTarget.value)}>
              <option value="">All fleets</option>
              {fleets.data?.map((f) => (
                <option value={f.id} title={f.name}>
                  {f.name}
                </option>
              ))}
            </select>
          </Field>
          <button type="button" onClick={devices.reload}>
            Refresh
          </button>
        </div>
        {!problem && <ErrorBox error={devices.error} />}
        {devices.loading && <Busy label="Loading devices…" />}
        {devices.data && (
          <>
            <p role="status" data-testid="device-count">
              {shown.length} of {devices.data.length} devices{q ? ' that match the query' : ''}
            </p>
            <VirtualTable
              label="Devices"
              rows={shown}
              columns={columns}
              rowKey={(d) => d.id}
              sort={sort}
              onSort={(key) => setSort((s) => toggleSort(s, key))}
            />
          </>
        )}
        <CreateDevice {...{ api, workspaceId }} fleets={fleets.data ?? []} onCreated={devices.reload} />
      </section>
    </>
  );
};

const CreateFleet = ({ api, workspaceId, onCreated }: Pick<PageProps, 'api' | 'workspaceId'> & { onCreated: () => void }) => {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="inline"
      aria-labelledby="fleet-new"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await run(() => api.createFleet(workspaceId, name.trim(), description))) {
          setName('');
          setDescription('');
          onCreated();
        }
      }}
    >
      <h3 id="fleet-new">New fleet</h3>
      <Field label="Fleet name">
        <input name="fleet-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Fleet description">
        <input name="fleet-description" maxLength={1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </Field>
      <Submit busy={busy}>Create fleet</Submit>
      <ErrorBox error={error} />
    </form>
  );
};

const CreateDevice = ({
  api,
  workspaceId,
  fleets,
  onCreated,
}: Pick<PageProps, 'api' | 'workspaceId'> & { fleets: { id: string; name: string }[]; onCreated: () => void }) => {
  const [name, setName] = useState('');
  const [fleetId, setFleetId] = useState('');
  const [physId, setPhysId] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="inline"
      aria-labelledby="device-new"
      onSubmit={async (e) => {
        e.preventDefault();
        const created = await run(() =>
          api.createDevice(workspaceId, { name: name.trim(), ...(fleetId ? { fleet_id: fleetId } : {}), ...(physId ? { phys_id: physId } : {}) }),
        );
        if (created) {
          setName('');
          setPhysId('');
          onCreated();
        }
      }}
    >
      <h3 id="device-new">New device</h3>
      <Field label="Device name">
        <input name="device-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Device fleet">
        <select name="device-fleet" value={fleetId} onChange={(e) => setFleetId(e.currentTarget.value)}>
          <option value="">default</option>
          {fleets.map((f) => (
            <option value={f.id} title={f.name}>
              {f.name}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Physical ID (optional)">
        <input name="device-phys-id" maxLength={128} value={physId} onInput={(e) => setPhysId(e.currentTarget.value)} />
      </Field>
      <Submit busy={busy}>Create device</Submit>
      <ErrorBox error={error} />
    </form>
  );
};

/** Saves the query on screen as a group (a name, then the group's page). */
const SaveAsGroup = ({ api, workspaceId, navigate, query }: Pick<PageProps, 'api' | 'workspaceId' | 'navigate'> & { query: string }) => {
  const [name, setName] = useState('');
  const { busy, error, run } = useAction();
  return (
    <form
      class="inline"
      aria-labelledby="group-from-search"
      onSubmit={async (e) => {
        e.preventDefault();
        const group = await run(() => api.createGroup(workspaceId, { name: name.trim(), query }));
        if (group) navigate({ page: 'group', workspaceId, groupId: group.id });
      }}
    >
      <h3 id="group-from-search">Save as group</h3>
      <p class="hint">A group is this query saved: its devices are those that match it at any moment (fleet-wide jobs and FOTA can target it).</p>
      <Field label="Group name">
        <input name="group-name" required maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Submit busy={busy}>Save as group</Submit>
      <ErrorBox error={error} />
    </form>
  );
};
