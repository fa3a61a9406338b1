import { closeCondition, conditionOf, listConditions, openCondition } from '../../../lambdas/domain/alarms/conditions';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import type { ConditionsQuery } from '../../../lambdas/schemas/condition';
import type { Db } from '../../../lambdas/shared/clients';
import { ConflictError, NotFoundError, ValidationError } from '../../../lambdas/shared/errors';
import { putClosedConditionRecord } from '../../../lambdas/stores/condition-store';
import { listOpenConditionsOfDevice } from '../../../lambdas/stores/device-mqtt-store';
import { readDeviceEvents } from '../../../lambdas/stores/device-event-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf, pageOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const newWorkspace = async () => {
  const { caller, workspace_id } = await newAccount(db);
  const place = async (name = 'freezer') => {
    const device = await createDevice(db, caller, workspace_id, { name, phys_id: '' });
    return { workspace_id, fleet_id: device.fleet_id, device_id: device.id };
  };
  const list = (query: ConditionsQuery = {}, now?: number) => itemsOf(listConditions(db, caller, workspace_id, query, now));
  return { caller, workspaceId: workspace_id, place, list };
};

describe('conditions on DynamoDB Local', () => {
  it('keeps a closed condition with its finish, finish payload and duration, and the device answers only the open ones', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();

    await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', payload: { t: 9 }, start: '2026-02-01T10:00:00Z' });
    await openCondition({ db }, place, { uuid: 'c-2', tag: 'door', start: '2026-02-01T10:01:00.250Z' });
    const closed = await closeCondition({ db }, place, { uuid: 'c-1', finish_payload: { t: 5 }, finish: '2026-02-01T10:05:30.500Z' });

    expect(closed).toMatchObject({ status: 'closed', finish: '2026-02-01T10:05:30.500Z', duration_seconds: 330.5, finish_payload: { t: 5 } });
    expect(await ws.list()).toEqual([
      {
        uuid: 'c-2',
        device_id: place.device_id,
        fleet_id: place.fleet_id,
        tag: 'door',
        status: 'open',
        payload: null,
        finish_payload: null,
        start: '2026-02-01T10:01:00.250Z',
        finish: null,
        duration_seconds: null,
      },
      {
        uuid: 'c-1',
        device_id: place.device_id,
        fleet_id: place.fleet_id,
        tag: 'overheat',
        status: 'closed',
        payload: { t: 9 },
        finish_payload: { t: 5 },
        start: '2026-02-01T10:00:00.000Z',
        finish: '2026-02-01T10:05:30.500Z',
        duration_seconds: 330.5,
      },
    ]);
    expect((await listOpenConditionsOfDevice(db, place.device_id)).map((c) => c.uuid)).toEqual(['c-2']);
    const logged = await readDeviceEvents(db, place.device_id, { limit: 10 });
    expect(logged.map((e) => [e.type, (e.payload as { status: string }).status])).toEqual([
      ['condition', 'closed'],
      ['condition', 'open'],
      ['condition', 'open'],
    ]);
    expect(logged[0].payload).toEqual({ uuid: 'c-1', status: 'closed', tag: 'overheat', finish_payload: { t: 5 }, finish: '2026-02-01T10:05:30.500Z' });
  });

  it('writes a retried opening or close once, and a late opening after its close changes nothing', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();
    const opening = { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' };

    await openCondition({ db }, place, opening);
    await openCondition({ db }, place, opening);
    const first = await closeCondition({ db }, place, { uuid: 'c-1', finish: '2026-02-01T10:01:00Z' });
    const again = await closeCondition({ db }, place, { uuid: 'c-1', finish: '2026-02-01T10:09:00Z' });
    const late = await openCondition({ db }, place, opening);

    expect(again).toEqual(first);
    expect(late).toEqual(first);
    expect(await ws.list()).toHaveLength(1);
    expect(await listOpenConditionsOfDevice(db, place.device_id)).toEqual([]);
    expect(await closeCondition({ db }, place, { uuid: 'never', finish: '2026-02-01T10:01:00Z' })).toBeUndefined();
  });

  it('keeps an MQTT close handled before its opening, which the opening then closes; over HTTPS such a close writes nothing', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();
    const opening = { uuid: 'c-1', tag: 'overheat', payload: { t: 9 }, start: '2026-02-01T10:00:00Z' };
    const close = { uuid: 'c-1', finish_payload: { t: 5 }, finish: '2026-02-01T10:00:30Z' };

    expect(await closeCondition({ db }, place, close, '2026-02-01T10:00:31.000Z')).toBeUndefined();
    expect(await ws.list()).toEqual([]);
    expect(await closeCondition({ db }, place, close, '2026-02-01T10:00:31.000Z', { keepEarly: true })).toBeUndefined();
    expect(await ws.list()).toEqual([]);
    const opened = await openCondition({ db }, place, opening, '2026-02-01T10:00:32.000Z');

    expect(opened).toMatchObject({ status: 'closed', payload: { t: 9 }, finish_payload: { t: 5 }, finish: '2026-02-01T10:00:30.000Z', duration_seconds: 30 });
    expect(await ws.list()).toEqual([conditionOf(opened)]);
    expect(await listOpenConditionsOfDevice(db, place.device_id)).toEqual([]);
    const logged = await readDeviceEvents(db, place.device_id, { limit: 10 });
    expect(logged.map((e) => [e.ts, (e.payload as { status: string }).status])).toEqual([
      ['2026-02-01T10:00:32.000Z', 'open'],
      ['2026-02-01T10:00:31.000Z', 'closed'],
    ]);
    // Used once: the uuid opened again later stays open.
    const reopened = await openCondition({ db }, place, { ...opening, start: '2026-02-01T10:00:20Z' });
    expect(reopened.status).toBe('open');
  });

  it('closes every condition whose opening and MQTT close are handled at the same time', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();
    const uuids = Array.from({ length: 30 }, (_, i) => `race-${i}`);

    await Promise.all(
      uuids.flatMap((uuid) => [
        openCondition({ db }, place, { uuid, tag: 'overheat', start: '2026-02-01T10:00:00Z' }),
        closeCondition({ db }, place, { uuid, finish: '2026-02-01T10:00:09Z' }, undefined, { keepEarly: true }),
      ]),
    );

    expect(await listOpenConditionsOfDevice(db, place.device_id)).toEqual([]);
    const listed = await ws.list();
    expect(listed).toHaveLength(30);
    expect(listed.every((c) => c.status === 'closed' && c.duration_seconds === 9)).toBe(true);
  });

  it('leaves an opening that started after a kept close open, and a later close of it still closes it', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();

    await closeCondition({ db }, place, { uuid: 'c-1', finish: '2026-02-01T09:00:00Z' }, undefined, { keepEarly: true });
    const opened = await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' });
    const closed = await closeCondition({ db }, place, { uuid: 'c-1', finish: '2026-02-01T10:00:05Z' }, undefined, { keepEarly: true });
    const again = await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T08:00:00Z' });

    expect(opened.status).toBe('open');
    expect(closed).toMatchObject({ status: 'closed', duration_seconds: 5 });
    // The kept close went with the close that ended the condition.
    expect(again.status).toBe('open');
  });

  it('replaces an open condition opened again at another start, and opens a closed uuid anew as a second record', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();

    await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' });
    await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T11:00:00Z' });
    await closeCondition({ db }, place, { uuid: 'c-1', finish: '2026-02-01T11:00:10Z' });
    await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T12:00:00Z' });

    const expected = [
      ['2026-02-01T12:00:00.000Z', 'open'],
      ['2026-02-01T11:00:00.000Z', 'closed'],
    ];
    expect((await ws.list()).map((c) => [c.start, c.status])).toEqual(expected);
    expect((await ws.list({ device: place.device_id })).map((c) => [c.start, c.status])).toEqual(expected);
  });

  it('refuses a close written over an opening of the same uuid made meanwhile (409), writing nothing', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();
    const read = await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' });
    // the device opened it again, at another start, between the close's reads and its write
    await openCondition({ db }, place, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T11:00:00Z' });

    const closing = putClosedConditionRecord(db, { ...read, status: 'closed', finish: '2026-02-01T10:30:00.000Z', duration_seconds: 1800 });

    await expect(closing).rejects.toThrow(ConflictError);
    expect((await ws.list()).map((c) => [c.start, c.status])).toEqual([['2026-02-01T11:00:00.000Z', 'open']]);
    expect((await listOpenConditionsOfDevice(db, place.device_id)).map((c) => c.start)).toEqual(['2026-02-01T11:00:00.000Z']);
  });

  it('filters by tag, device, status, minimum duration (open ones by the time since they opened), start and end', async () => {
    const ws = await newWorkspace();
    const a = await ws.place('a');
    const b = await ws.place('b');
    await openCondition({ db }, a, { uuid: 'a-short', tag: 'overheat', start: '2026-02-01T10:00:00Z' });
    await closeCondition({ db }, a, { uuid: 'a-short', finish: '2026-02-01T10:00:30Z' });
    await openCondition({ db }, a, { uuid: 'a-long', tag: 'door', start: '2026-02-01T11:00:00Z' });
    await closeCondition({ db }, a, { uuid: 'a-long', finish: '2026-02-01T11:10:00Z' });
    await openCondition({ db }, b, { uuid: 'b-open', tag: 'overheat', start: '2026-02-01T12:00:00Z' });
    const uuids = async (query: ConditionsQuery, now?: number) => (await ws.list(query, now)).map((c) => c.uuid);

    expect(await uuids({})).toEqual(['b-open', 'a-long', 'a-short']);
    expect(await uuids({ tag: 'overheat' })).toEqual(['b-open', 'a-short']);
    expect(await uuids({ device: a.device_id })).toEqual(['a-long', 'a-short']);
    expect(await uuids({ status: 'open' })).toEqual(['b-open']);
    expect(await uuids({ status: 'closed', tag: 'overheat' })).toEqual(['a-short']);
    expect(await uuids({ min_duration_seconds: 60 }, Date.parse('2026-02-01T12:00:59Z'))).toEqual(['a-long']);
    expect(await uuids({ min_duration_seconds: 60 }, Date.parse('2026-02-01T12:01:00Z'))).toEqual(['b-open', 'a-long']);
    expect(await uuids({ start: '2026-02-01T11:00:00Z' })).toEqual(['b-open', 'a-long']);
    expect(await uuids({ end: '2026-02-01T12:00:00Z' })).toEqual(['a-long', 'a-short']);
    expect(await uuids({ start: '2026-02-01T10:00:01Z', end: '2026-02-01T11:00:00.001Z' })).toEqual(['a-long']);
  });

  it('pages newest first with next, filters kept, and refuses a cursor outside the start and end it was not made for', async () => {
    const ws = await newWorkspace();
    const place = await ws.place();
    for (let i = 0; i < 5; i++) await openCondition({ db }, place, { uuid: `c-${i}`, tag: i % 2 ? 'odd' : 'even', start: `2026-02-01T10:0${i}:00Z` });

    const first = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 2 }));
    const second = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 2, cursor: first.next! }));
    const last = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 2, cursor: second.next! }));
    const even = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 2, tag: 'even' }));
    const evenRest = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 2, tag: 'even', cursor: even.next! }));

    expect([first, second, last].map((p) => p.items.map((c) => c.uuid))).toEqual([['c-4', 'c-3'], ['c-2', 'c-1'], ['c-0']]);
    expect(last.next).toBeNull();
    expect([...even.items, ...evenRest.items].map((c) => c.uuid)).toEqual(['c-4', 'c-2', 'c-0']);
    await expect(listConditions(db, ws.caller, ws.workspaceId, { limit: 2, cursor: first.next!, end: '2026-02-01T10:01:00Z' })).rejects.toThrow(
      ValidationError,
    );
  });

  it('lists one device’s conditions from its own partition, paged with cursors of its own list', async () => {
    const ws = await newWorkspace();
    const a = await ws.place('a');
    const b = await ws.place('b');
    for (let i = 0; i < 3; i++) await openCondition({ db }, a, { uuid: `a-${i}`, tag: 'door', start: `2026-02-01T10:0${i}:00Z` });
    await openCondition({ db }, b, { uuid: 'b-0', tag: 'door', start: '2026-02-01T10:05:00Z' });
    const queried: unknown[] = [];
    const send = db.doc.send.bind(db.doc);
    const spied = {
      ...db,
      doc: {
        send: (command: { input: { ExpressionAttributeValues?: Record<string, unknown> } }) => {
          queried.push(command.input.ExpressionAttributeValues?.[':pk']);
          return send(command as never);
        },
      },
    } as unknown as Db;

    const first = await pageOf(listConditions(spied, ws.caller, ws.workspaceId, { device: a.device_id, limit: 2 }));
    const rest = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { device: a.device_id, limit: 2, cursor: first.next! }));
    const workspacePage = await pageOf(listConditions(db, ws.caller, ws.workspaceId, { limit: 1 }));

    expect([...first.items, ...rest.items].map((c) => c.uuid)).toEqual(['a-2', 'a-1', 'a-0']);
    expect(queried.filter((pk) => pk !== undefined)).toEqual([`DEV#${a.device_id}`]);
    await expect(listConditions(db, ws.caller, ws.workspaceId, { device: a.device_id, cursor: workspacePage.next! })).rejects.toThrow(ValidationError);
  });

  it('answers nothing of another account’s device named under the caller’s own workspace', async () => {
    const owner = await newWorkspace();
    const other = await newWorkspace();
    const foreign = await owner.place();
    await openCondition({ db }, foreign, { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' });

    expect(await other.list({ device: foreign.device_id })).toEqual([]);
    expect(await owner.list({ device: foreign.device_id })).toHaveLength(1);
  });

  it('answers 404 for another account’s workspace and lists nothing of another workspace', async () => {
    const owner = await newWorkspace();
    const other = await newWorkspace();
    await openCondition({ db }, await owner.place(), { uuid: 'c-1', tag: 'overheat', start: '2026-02-01T10:00:00Z' });

    await expect(listConditions(db, other.caller, owner.workspaceId, {})).rejects.toThrow(NotFoundError);
    expect(await other.list()).toEqual([]);
  });
});
