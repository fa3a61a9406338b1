/**
 * `fleetstream devices`: the devices of a workspace that match a query (`GET …/devices?q=`) or a
 * group (`GET …/groups/{id}/devices`), every page of them, on `npm start` (--local: its runtime
 * file gives the API, its data folder the first key) or a deployed API (--url, --key). A table (or
 * a JSON array, or the count) on stdout, written as the pages come; progress on stderr.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalOptions } from '../commands/options';
import { findRuntime } from '../../local/runtime-file';

/** `devices`' options (the options of bin/commands/devices.ts, parsed). */
export interface DevicesOptions extends LocalOptions {
  q?: string;
  group?: string;
  fleet?: string[];
  workspace?: string;
  count?: boolean;
  json?: boolean;
  pageSize: number;
  quiet?: boolean;
  url?: string;
  key?: string;
}

/** A device as the API lists it: what the table shows of it. */
interface ListedDevice {
  id: string;
  name: string;
  fleet_name?: string;
  connected?: boolean;
  last_seen_at?: string | null;
  firmware_version?: string | null;
  tags?: Record<string, string>;
}

/** A refusal worth its own exit code: 2 for what the user gave (a bad query, an unknown ID), 1 otherwise. */
export class Refused extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Which API a command that calls it is told (`devices`, `alarms`): `--local` or `--url`, and `--key`. */
export type ApiOptions = LocalOptions & { url?: string; key?: string };

/** The API and the key to call it with: the running `npm start`'s, or the given ones. */
export const endpointOf = (options: ApiOptions) => {
  const given = options.key || process.env.FLEETSTREAM_API_KEY || undefined;
  if (!options.local) return { base: options.url!.replace(/\/+$/, ''), key: given! };
  const runtime = findRuntime(options.dataDir, options.port);
  // `npm start` on a data folder remembers its first account there (local/bootstrap.ts); in memory it does not.
  const bootstrap = join(options.dataDir, 'bootstrap.json');
  const key = given ?? (existsSync(bootstrap) ? (JSON.parse(readFileSync(bootstrap, 'utf8')) as { api_key?: string }).api_key : undefined);
  if (!key) {
    const why = runtime.in_memory ? 'it runs in memory' : `no bootstrap.json in ${options.dataDir}`;
    throw new Refused(`no key for the runtime on port ${runtime.port} (${why}): give --key <the READY line's api_key>.`, 2);
  }
  return { base: runtime.base_url, key };
};

const say = (options: DevicesOptions, line: string) => {
  if (!options.quiet) process.stderr.write(`devices: ${line}\n`);
};

/**
 * One call of the API, its JSON answer; a refusal as the API words it (with the fields it names),
 * exit code 2 for what the caller must change (400, 404, 409), else 1.
 */
export const callJson = async (base: string, key: string, path: string, { method = 'GET', send }: { method?: string; send?: unknown } = {}) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': key, accept: 'application/json', ...(send === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(send === undefined ? {} : { body: JSON.stringify(send) }),
  });
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Refused(`${path.split('?')[0]}: answered ${response.status} ${text.slice(0, 200)}`, 1);
  }
  if (!response.ok) {
    const error = body?.error ?? {};
    const details = (error.details ?? []).map((d: { field: string; message: string }) => `${d.field}: ${d.message}`).join('; ');
    throw new Refused(
      `${error.message ?? `answered ${response.status}`}${details ? ` (${details})` : ''}`,
      response.status === 400 || response.status === 404 || response.status === 409 ? 2 : 1,
    );
  }
  return body;
};

const getJson = (base: string, key: string, path: string) => callJson(base, key, path);

/** The key's workspace (its first: a bound key lists one), unless `--workspace` names one. */
export const workspaceOf = async (options: { workspace?: string }, base: string, key: string): Promise<string> => {
  const workspace = options.workspace ?? (await getJson(base, key, '/workspaces?limit=1')).workspaces?.[0]?.id;
  if (!workspace) throw new Refused('the key lists no workspace: give --workspace.', 2);
  return workspace;
};

/** The path of the list the options name, without paging. */
const listPath = async (options: DevicesOptions, base: string, key: string) => {
  const workspace = await workspaceOf(options, base, key);
  if (options.group) return `/workspaces/${encodeURIComponent(workspace)}/groups/${encodeURIComponent(options.group)}/devices`;
  const query = new URLSearchParams();
  if (options.q !== undefined) query.set('q', options.q);
  for (const fleet of options.fleet ?? []) query.append('fleet', fleet);
  const text = query.toString();
  return `/workspaces/${encodeURIComponent(workspace)}/devices${text ? `?${text}` : ''}`;
};

/** Every device of the list, page after page (`limit`, `next`), with progress after each page once there is more than one. */
async function* pagesOf(options: DevicesOptions, base: string, key: string, path: string): AsyncGenerator<ListedDevice[]> {
  const separator = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  let seen = 0;
  let pages = 0;
  do {
    const page: { devices: ListedDevice[]; next?: string | null } = await getJson(
      base,
      key,
      `${path}${separator}limit=${options.pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    seen += page.devices.length;
    pages++;
    cursor = page.next ?? null;
    if (cursor || pages > 1)
      say(options, `${seen.toLocaleString('en-US')} devices read (${pages} ${pages === 1 ? 'page' : 'pages'})${cursor ? '…' : ', done'}`);
    yield page.devices;
  } while (cursor);
}

const COLUMNS: Array<{ title: string; width: number; cell: (d: ListedDevice) => string }> = [
  { title: 'ID', width: 24, cell: (d) => d.id },
  { title: 'NAME', width: 24, cell: (d) => d.name },
  { title: 'FLEET', width: 16, cell: (d) => d.fleet_name ?? '' },
  { title: 'ONLINE', width: 6, cell: (d) => (d.connected ? 'yes' : 'no') },
  { title: 'LAST SEEN', width: 24, cell: (d) => d.last_seen_at ?? '-' },
  { title: 'FIRMWARE', width: 12, cell: (d) => d.firmware_version ?? '-' },
  {
    title: 'TAGS',
    width: 0,
    cell: (d) =>
      Object.entries(d.tags ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
  },
];

/** A table row of `columns`: each cell cut to its column's width (with …), padded; a column of width 0 as long as it is. */
export const tableRow = (columns: ReadonlyArray<{ width: number }>, cells: string[]) =>
  cells
    .map((cell, i) => {
      const { width } = columns[i];
      if (!width) return cell;
      return (cell.length > width ? `${cell.slice(0, width - 1)}…` : cell).padEnd(width);
    })
    .join('  ')
    .trimEnd();
const row = (cells: string[]) => tableRow(COLUMNS, cells);

/**
 * Lists or counts the matching devices; resolves with the exit code: 0, 2 when the API refused what
 * was given (a malformed query: its message says where), 1 for anything else.
 */
export const listMatchingDevices = async (options: DevicesOptions): Promise<number> => {
  const out = (text: string) => process.stdout.write(text);
  try {
    const { base, key } = endpointOf(options);
    const path = await listPath(options, base, key);
    let count = 0;
    let pages = 0;
    for await (const devices of pagesOf(options, base, key, path)) {
      // The header (or the array's start) once the first page came: a refused query prints nothing on stdout.
      if (!pages++ && !options.count) out(options.json ? '[' : `${row(COLUMNS.map((c) => c.title))}\n`);
      if (options.json && !options.count) for (const device of devices) out(`${count++ ? ',' : ''}\n${JSON.stringify(device)}`);
      else if (!options.count)
        for (const device of devices) {
          out(`${row(COLUMNS.map((c) => c.cell(device)))}\n`);
          count++;
        }
      else count += devices.length;
    }
    if (options.count) out(options.json ? `${JSON.stringify({ count })}\n` : `${count}\n`);
    else if (options.json) out(`${count ? '\n' : ''}]\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`devices: ${(error as Error).message}\n`);
    return error instanceof Refused ? error.exitCode : 1;
  }
};
