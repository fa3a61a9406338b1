/** Issue 33: the console's overview and device-health helpers (routes, latest values, sparklines, the timeline's words). */
import type { DeviceEvent, TimeseriesRecord } from '../../../console/src/lib/api';
import { describeEvent, SPARK_POINTS, sparklinePoints, tagHealth } from '../../../console/src/lib/health';
import { parseRoute, routeHash, type Route } from '../../../console/src/lib/router';

const point = (tag: string, second: number, payload: unknown): TimeseriesRecord => ({
  timestamp_device: `2026-11-29T10:00:${String(second).padStart(2, '0')}.000Z`,
  timestamp_in: `2026-11-29T10:00:${String(second).padStart(2, '0')}.000Z`,
  fleet_id: 'flt-1',
  device_id: 'dev-1',
  tag,
  payload,
});

describe('routes of the overview and of a device’s data', () => {
  it('makes the overview the workspace’s home and carries a device to the data page', () => {
    const routes: Route[] = [
      { page: 'overview', workspaceId: 'wks-1' },
      { page: 'data', workspaceId: 'wks-1', deviceId: 'dev-1' },
      { page: 'data', workspaceId: 'wks-1' },
    ];
    for (const route of routes) expect(parseRoute(routeHash(route))).toEqual(route);
    expect(parseRoute('#/w/wks-1')).toEqual({ page: 'overview', workspaceId: 'wks-1' });
    expect(parseRoute('#/w/wks-1/')).toEqual({ page: 'overview', workspaceId: 'wks-1' });
  });
});

describe('tagHealth', () => {
  it('answers each tag’s newest point and its first numeric field’s values, oldest first', () => {
    const records = [
      point('env', 3, { temp: 3, unit: 'C' }),
      point('env', 1, { temp: 1 }),
      point('env', 2, { temp: 2 }),
      point('up', 5, 7),
      point('log', 4, { msg: 'hi' }),
    ];
    expect(tagHealth(records).map(({ tag, latest, field, values }) => ({ tag, latest: latest.payload, field, values }))).toEqual([
      { tag: 'env', latest: { temp: 3, unit: 'C' }, field: 'temp', values: [1, 2, 3] },
      { tag: 'log', latest: { msg: 'hi' }, field: undefined, values: [] },
      { tag: 'up', latest: 7, field: 'value', values: [7] },
    ]);
  });

  it('keeps at most the newest SPARK_POINTS values of a tag', () => {
    const records = Array.from({ length: 50 }, (_, i) => point('t', i, { v: i }));
    const [t] = tagHealth(records);
    expect(t.values).toHaveLength(SPARK_POINTS);
    expect(t.values.at(-1)).toBe(49);
  });
});

describe('sparklinePoints', () => {
  it('spans the box, highest value at the top; equal values draw a flat middle line', () => {
    expect(sparklinePoints([0, 5, 10], 100, 20)).toBe('0.0,20.0 50.0,10.0 100.0,0.0');
    expect(sparklinePoints([4, 4], 10, 20)).toBe('0.0,10.0 10.0,10.0');
    expect(sparklinePoints([], 10, 20)).toBe('');
  });
});

describe('describeEvent', () => {
  const event = (type: string, payload: unknown): DeviceEvent => ({
    ts: '2026-11-29T10:00:00Z',
    type,
    direction: 'd2c',
    fleet_id: 'f',
    device_id: 'd',
    payload,
  });
  it('says what connections, jobs, FOTA and conditions did', () => {
    expect(describeEvent(event('connection', { device_ip: '10.0.0.1' }))).toBe('Connected from 10.0.0.1');
    expect(describeEvent(event('disconnection', { reason: 'CLIENT_INITIATED_DISCONNECT' }))).toBe('Disconnected (CLIENT_INITIATED_DISCONNECT)');
    expect(describeEvent(event('job', { name: 'reboot', status: 'done' }))).toBe('Job reboot done');
    expect(describeEvent(event('fota', { status: 'failed', value: { firmware_id: 'app', firmware_version: '2.0' }, message: 'flash' }))).toBe(
      'FOTA app 2.0: failed (flash)',
    );
    expect(describeEvent(event('condition', { tag: 'overheat', status: 'open' }))).toBe('Condition overheat open');
  });
});
