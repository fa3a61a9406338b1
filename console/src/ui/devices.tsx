import { useMemo, useState } from 'preact/hooks';
import type { Device } from '../lib/api';
import { withConnection } from '../lib/live';
import { routeHash } from '../lib/router';
import { filterRows, sortRows, toggleSort, type SortSpec } from '../lib/table';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Submit, useAction, useLoad, VirtualTable, when, type Column } from './components';
import { useLive } from './live';

type DeviceColumn = 'name' | 'id' | 'fleet_name' | 'connected' | 'last_connected_at' | 'created_at';

const deviceValue = (d: Device, key: DeviceColumn): unknown => (key === 'connected' ? Boolean(d.connected) : d[key]);

/** Fleets (list, create) and the workspace's devices (search, sort, create), fast with 10,000 devices. */
export const DevicesPage = ({ api, workspaceId }: PageProps) => {
  const fleets = useLoad(() => api.listFleets(workspaceId), [workspaceId]);
  const devices = useLoad(() => api.listDevices(workspaceId), [workspaceId]);
  // Connections show as they happen; after a reconnection (or every 30 s while it is down) the list is read again.
  useLive(workspaceId, 'connection', (message) => (message ? devices.setData((list) => list?.map((d) => withConnection(d, message))) : devices.reload()));
  const [search, setSearch] = useState('');
  const [fleetFilter, setFleetFilter] = useState('');
  const [sort, setSort] = useState<SortSpec<DeviceColumn> | undefined>({ key: 'name', direction: 'asc' });
  const shown = useMemo(() => {
    const inFleet = fleetFilter ? (devices.data ?? []).filter((d) => d.fleet_id === fleetFilter) : (devices.data ?? []);
    return sortRows(
      filterRows(inFleet, search, (d) => [d.name, d.id, d.fleet_name, d.phys_id]),
      sort,
      deviceValue,
    );
  }, [devices.data, search, sort, fleetFilter]);

  const perFleet = useMemo(() => {
    const counts = new Map<string, number>();
    for (const d of devices.data ?? []) counts.set(d.fleet_id, (counts.get(d.fleet_id) ?? 0) + 1);
    return counts;
  }, [devices.data]);

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
        {fleets.data && (
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
                <th scope="col">ID</th>
                <th scope="col">Devices</th>
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
                  <td>{devices.data ? (perFleet.get(f.id) ?? 0) : '…'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <CreateFleet {...{ api, workspaceId }} onCreated={fleets.reload} />
      </section>
      <section aria-labelledby="devices-h">
        <h2 id="devices-h">Devices</h2>
        <div class="toolbar">
          <Field label="Search devices">
            <input type="search" name="device-search" placeholder="name, ID, fleet" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
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
        <ErrorBox error={devices.error} />
        {devices.loading && <Busy label="Loading devices…" />}
        {devices.data && (
          <>
            <p role="status" data-testid="device-count">
              {shown.length} of {devices.data.length} devices
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
