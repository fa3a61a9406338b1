/**
 * `fleetstream alarms`: a workspace's alarms (`GET …/alarms`, open ones by default, every page),
 * and `fleetstream alarms ack <alarm-id>` (`POST …/alarms/{id}/acknowledge`), on `npm start`
 * (--local) or a deployed API (--url, --key), as `fleetstream devices` finds them (bin/cli/devices.ts).
 * A table (or JSON) on stdout; refusals in words on stderr.
 */
import { callJson, endpointOf, Refused, tableRow, workspaceOf, type ApiOptions } from './devices';

/** `alarms`' options (the options of bin/commands/alarms.ts, parsed). */
export interface AlarmsOptions extends ApiOptions {
  status?: string;
  severity?: string;
  device?: string;
  rule?: string;
  workspace?: string;
  json?: boolean;
  pageSize: number;
  quiet?: boolean;
}

/** `alarms ack`'s options. */
export interface AckOptions extends ApiOptions {
  note?: string;
  workspace?: string;
  json?: boolean;
}

/** An alarm as the API lists it: what the table shows of it. */
interface ListedAlarm {
  id: string;
  rule_name: string;
  kind: string;
  severity: string;
  device_id: string;
  status: string;
  opened_at: string;
  acknowledged_by: string | null;
  note: string | null;
}

const COLUMNS: Array<{ title: string; width: number; cell: (a: ListedAlarm) => string }> = [
  { title: 'ID', width: 24, cell: (a) => a.id },
  { title: 'SEVERITY', width: 8, cell: (a) => a.severity },
  { title: 'STATUS', width: 12, cell: (a) => a.status },
  { title: 'KIND', width: 9, cell: (a) => a.kind },
  { title: 'RULE', width: 24, cell: (a) => a.rule_name },
  { title: 'DEVICE', width: 24, cell: (a) => a.device_id },
  { title: 'OPENED', width: 24, cell: (a) => a.opened_at },
  { title: 'ACKNOWLEDGED BY', width: 0, cell: (a) => (a.acknowledged_by ? `${a.acknowledged_by}${a.note ? `: ${a.note}` : ''}` : '-') },
];

const row = (cells: string[]) => tableRow(COLUMNS, cells);
const header = () => `${row(COLUMNS.map((c) => c.title))}\n`;
const line = (alarm: ListedAlarm) => `${row(COLUMNS.map((c) => c.cell(alarm)))}\n`;

/** A device ID as it is (`dev-…`), or the ID of the one device of that name (`GET …/devices?q=name = "…"`). */
const deviceIdOf = async (given: string, base: string, key: string, workspace: string) => {
  if (/^dev-[0-9a-z]{20}$/.test(given)) return given;
  const q = encodeURIComponent(`name = ${JSON.stringify(given)}`);
  const { devices } = (await callJson(base, key, `/workspaces/${encodeURIComponent(workspace)}/devices?q=${q}&limit=2`)) as { devices: Array<{ id: string }> };
  if (!devices.length) throw new Refused(`no device is named ${JSON.stringify(given)} in ${workspace}: give its name or its ID (dev-…).`, 2);
  if (devices.length > 1) throw new Refused(`several devices are named ${JSON.stringify(given)}: give its ID (dev-…).`, 2);
  return devices[0].id;
};

/** Runs a command's body, answering its exit code: 0, 2 for what the caller must change, 1 otherwise (said on stderr). */
const exitCodeOf = async (body: () => Promise<void>) => {
  try {
    await body();
    return 0;
  } catch (error) {
    process.stderr.write(`alarms: ${(error as Error).message}\n`);
    return error instanceof Refused ? error.exitCode : 1;
  }
};

/**
 * Lists the workspace's alarms (status `open` unless told, newest first, every page), as a table
 * or a JSON array; resolves with the exit code (2: a filter the API refused, an unknown device).
 */
export const listAlarms = (options: AlarmsOptions): Promise<number> =>
  exitCodeOf(async () => {
    const out = (text: string) => process.stdout.write(text);
    const { base, key } = endpointOf(options);
    const workspace = await workspaceOf(options, base, key);
    const query = new URLSearchParams({ limit: String(options.pageSize) });
    if ((options.status ?? 'open') !== 'all') query.set('status', options.status ?? 'open');
    if (options.severity) query.set('severity', options.severity);
    if (options.rule) query.set('rule', options.rule);
    if (options.device) query.set('device', await deviceIdOf(options.device, base, key, workspace));
    let cursor: string | null = null;
    let count = 0;
    let pages = 0;
    do {
      const page: { alarms: ListedAlarm[]; next?: string | null } = await callJson(
        base,
        key,
        `/workspaces/${encodeURIComponent(workspace)}/alarms?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      // The header (or the array's start) once the first page came: a refusal prints nothing on stdout.
      if (!pages++) out(options.json ? '[' : header());
      for (const alarm of page.alarms) {
        out(options.json ? `${count ? ',' : ''}\n${JSON.stringify(alarm)}` : line(alarm));
        count++;
      }
      cursor = page.next ?? null;
      if (cursor && !options.quiet) process.stderr.write(`alarms: ${count.toLocaleString('en-US')} alarms read (${pages} pages)…\n`);
    } while (cursor);
    if (options.json) out(`${count ? '\n' : ''}]\n`);
  });

/**
 * Acknowledges an alarm (with `--note`), printing it as acknowledged (a row, or its JSON); a closed
 * one is refused in words (the API's 409), an unknown one too (404): exit code 2.
 */
export const acknowledgeAlarm = (alarmId: string, options: AckOptions): Promise<number> =>
  exitCodeOf(async () => {
    const { base, key } = endpointOf(options);
    const workspace = await workspaceOf(options, base, key);
    const { alarm } = (await callJson(base, key, `/workspaces/${encodeURIComponent(workspace)}/alarms/${encodeURIComponent(alarmId)}/acknowledge`, {
      method: 'POST',
      send: options.note === undefined ? {} : { note: options.note },
    })) as { alarm: ListedAlarm };
    process.stdout.write(options.json ? `${JSON.stringify(alarm)}\n` : `${header()}${line(alarm)}`);
  });
