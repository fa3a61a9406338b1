import { createDevice, getDevice, listDevices, patchDevice, updateDevice } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { matchesQuery, parseQuery, type SearchableDevice } from '../../../lambdas/domain/registry/query';
import { searchDevices } from '../../../lambdas/domain/registry/search';
import type { Device } from '../../../lambdas/schemas/device';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError, ValidationError } from '../../../lambdas/shared/errors';
import { setDeviceFirmware } from '../../../lambdas/stores/device-health-store';
import { findDeviceLocator, getDeviceOfWorkspace } from '../../../lambdas/stores/device-store';
import { queryAll } from '../../../lambdas/stores/items';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf, pageOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

/** How many tag index entries a workspace holds. */
const indexOf = async (workspaceId: string) =>
  (await queryAll<{ device_id: string }>(db, `WKS#${workspaceId}`, 'TAG#', { ProjectionExpression: 'sk, device_id' })).length;
/** The sort keys of a workspace's tag index entries. */
const entriesOf = async (workspaceId: string) => {
  const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
  const { Items = [] } = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': `WKS#${workspaceId}`, ':p': 'TAG#' },
    }),
  );
  return Items.map((item) => item.sk as string).sort();
};

/** Every page of a search of `limit` devices, following `next`. */
const allPages = async (read: (cursor?: string) => ReturnType<typeof searchDevices>) => {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const { items, next } = await pageOf(read(cursor));
    ids.push(...items.map((d) => d.id));
    if (!next) return { ids, pages: pages + 1 };
    cursor = next;
  }
  throw new Error('more than 100 pages');
};

describe('device tags on DynamoDB Local', () => {
  it('answers {} for a device without tags and keeps the tags given at creation, with their index entries', async () => {
    const { caller, workspace_id } = await newAccount(db);

    const bare = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '' });
    const tagged = await createDevice(db, caller, workspace_id, { name: 'b', phys_id: '', tags: { site: 'milan', 'hw.rev': 'v#2' } });

    expect(bare.tags).toEqual({});
    expect(tagged.tags).toEqual({ site: 'milan', 'hw.rev': 'v#2' });
    expect(await getDevice(db, caller, workspace_id, tagged.id)).toEqual(tagged);
    expect(await entriesOf(workspace_id)).toEqual([`TAG#hw.rev#3#v#2#${tagged.id}`, `TAG#site#5#milan#${tagged.id}`]);
  });

  it('replaces every tag with PUT, keeps them when PUT has none, and merges with PATCH (null removes one)', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '', tags: { site: 'milan', model: 'v1' } });

    const kept = await updateDevice(db, caller, workspace_id, device.id, { name: 'b', fleet_id: default_fleet_id });
    const replaced = await updateDevice(db, caller, workspace_id, device.id, { name: 'b', fleet_id: default_fleet_id, tags: { floor: '3' } });
    const merged = await patchDevice(db, caller, workspace_id, device.id, { tags: { floor: null, site: 'rome', model: 'v2' } });
    const emptied = await patchDevice(db, caller, workspace_id, device.id, { tags: { site: null, model: null } });

    expect(kept.tags).toEqual({ site: 'milan', model: 'v1' });
    expect(replaced.tags).toEqual({ floor: '3' });
    expect(merged).toMatchObject({ name: 'b', tags: { site: 'rome', model: 'v2' } });
    expect(emptied.tags).toEqual({});
    expect(await entriesOf(workspace_id)).toEqual([]);
  });

  it('moves a device with PATCH as PUT does: its fleet history and locator follow', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const fleet = await createFleet(db, caller, workspace_id, { name: 'field', description: '' });
    const device = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '' });
    const twin = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '' });

    const moved = await patchDevice(db, caller, workspace_id, device.id, { fleet_id: fleet.id });
    await updateDevice(db, caller, workspace_id, twin.id, { name: 'a', fleet_id: fleet.id });

    expect(moved).toMatchObject({ name: 'a', fleet_id: fleet.id, fleet_name: 'field' });
    const [stored, put] = await Promise.all([getDeviceOfWorkspace(db, workspace_id, device.id), getDeviceOfWorkspace(db, workspace_id, twin.id)]);
    const shape = (history: typeof stored) => history?.fleet_history?.map(({ fleet_id, epoch }) => ({ fleet_id, epoch }));
    expect(shape(stored)).toEqual(shape(put));
    expect(shape(stored)?.at(-1)).toEqual({ fleet_id: fleet.id, epoch: 0 });
    expect(stored?.rev).toBe(put?.rev);
    expect(await findDeviceLocator(db, device.id)).toMatchObject({ fleet_id: fleet.id, name: 'a' });
  });

  it('refuses a PATCH that would leave 51 tags, and writes nothing', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    const device = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '', tags: fifty });

    const error = await patchDevice(db, caller, workspace_id, device.id, { name: 'renamed', tags: { k0: null, more: '1', another: '2' } }).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toEqual([{ field: 'body.tags', message: 'At most 50 tags: the change would leave the device 51.' }]);
    expect(await getDevice(db, caller, workspace_id, device.id)).toEqual(device);
    expect(await indexOf(workspace_id)).toBe(50);
  });

  it('replaces 50 tags with 50 others (past one transaction) and the index follows', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const tags = (prefix: string) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${prefix}${i}`, 'v']));
    const device = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '', tags: tags('old') });
    const before = await entriesOf(workspace_id);

    await expect(updateDevice(db, caller, workspace_id, device.id, { name: 'a', fleet_id: 'flt-123456789', tags: tags('new') })).rejects.toThrow(NotFoundError);
    expect(await entriesOf(workspace_id)).toEqual(before);
    const updated = await updateDevice(db, caller, workspace_id, device.id, { name: 'a', fleet_id: default_fleet_id, tags: tags('new') });

    expect(updated.tags).toEqual(tags('new'));
    expect(await entriesOf(workspace_id)).toEqual(
      Object.keys(tags('new'))
        .map((k) => `TAG#${k}#1#v#${device.id}`)
        .sort(),
    );
    expect((await itemsOf(listDevices(db, caller, workspace_id, { q: 'tags.new7 = "v"' }))).map((d) => d.id)).toEqual([device.id]);
    expect(await itemsOf(listDevices(db, caller, workspace_id, { q: 'tags.old7 = "v"' }))).toEqual([]);
  });

  it('answers 404 for a PATCH of another account’s device and writes nothing', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const device = await createDevice(db, theirs.caller, theirs.workspace_id, { name: 'a', phys_id: '' });

    await expect(patchDevice(db, mine.caller, theirs.workspace_id, device.id, { tags: { a: 'b' } })).rejects.toThrow(NotFoundError);
    await expect(patchDevice(db, mine.caller, mine.workspace_id, device.id, { tags: { a: 'b' } })).rejects.toThrow(NotFoundError);

    expect(await getDevice(db, theirs.caller, theirs.workspace_id, device.id)).toEqual(device);
  });
});

describe('device search on DynamoDB Local', () => {
  const SITES = ['milan', 'rome', 'turin'];
  let world: Awaited<ReturnType<typeof newAccount>> & { devices: Device[]; fleetB: string };

  beforeAll(async () => {
    const account = await newAccount(db);
    const fleetB = (await createFleet(db, account.caller, account.workspace_id, { name: 'b', description: '' })).id;
    const devices: Device[] = [];
    for (let i = 0; i < 30; i++) {
      const tags: Record<string, string> = { site: SITES[i % 3], floor: String(i % 5) };
      if (i % 4 === 0) tags.model = 'v2';
      devices.push(
        await createDevice(db, account.caller, account.workspace_id, {
          name: `d${String(i).padStart(2, '0')}`,
          phys_id: '',
          fleet_id: i % 2 ? fleetB : undefined,
          tags,
        }),
      );
    }
    // Another account with the same tags: never in this workspace's answers.
    const other = await newAccount(db);
    for (let i = 0; i < 5; i++) await createDevice(db, other.caller, other.workspace_id, { name: `x${i}`, phys_id: '', tags: { site: 'milan', model: 'v2' } });
    world = { ...account, devices, fleetB };
  });

  const expected = (q: string, fleets?: string[]) =>
    world.devices.filter((d) => (!fleets || fleets.includes(d.fleet_id)) && matchesQuery(parseQuery(q), d as unknown as SearchableDevice)).map((d) => d.id);

  it.each([
    'tags.site = "milan"',
    'tags.site = "milan" AND tags.model = "v2"',
    'tags.site IN ("rome", "turin") AND tags.floor > 2',
    'tags.model = "v2" AND tags.site != "rome"',
    'NOT EXISTS tags.model',
    'tags.floor >= 3 AND name < "d20"',
    'connected = false AND tags.site = "nowhere"',
    'created_at > "2000-01-01T00:00:00Z"',
  ])('finds exactly the devices matching %s, in ID order, on every page', async (q) => {
    const want = expected(q);

    const whole = await itemsOf(listDevices(db, world.caller, world.workspace_id, { q }));
    const paged = await allPages((cursor) => listDevices(db, world.caller, world.workspace_id, { q, limit: 4, cursor }));

    expect(whole.map((d) => d.id)).toEqual(want);
    expect(paged.ids).toEqual(want);
    expect(whole.every((d) => d.workspace_id === world.workspace_id && d.tags)).toBe(true);
  });

  it('reads, for a one-pass page, about what its matches need and nothing ahead once the page is full', async () => {
    // Every device the page's Queries evaluated (their ScannedCount), on the devices' collection.
    let evaluated = 0;
    const counting: Db = {
      ...db,
      doc: {
        send: async (command: { input: Record<string, unknown> }) => {
          const output = await (db.doc.send as (c: unknown) => Promise<Record<string, unknown>>)(command);
          const values = command.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
          if (values?.[':prefix'] === 'DEV#') evaluated += Number(output.ScannedCount ?? 0);
          return output;
        },
      } as unknown as Db['doc'],
    };
    const q = 'tags.floor >= 3'; // 12 of the 30 devices, not a tag index plan (a range)

    const { items, next } = await pageOf(listDevices(counting, world.caller, world.workspace_id, { q, limit: 4 }));
    await new Promise((resolve) => setImmediate(resolve)); // a read ahead would have answered by now

    expect(items.map((d) => d.id)).toEqual(expected(q).slice(0, 4));
    expect(next).not.toBeNull();
    // 5 matches (a page and the one past it) at 40 % take about 13 devices; growing reads took all 30
    expect(evaluated).toBeLessThanOrEqual(20);
  });

  it('combines a query with fleets (the list’s `fleet`, and the groups’ and targets’ fleetIds)', async () => {
    const q = 'tags.site = "milan"';

    const found = await itemsOf(listDevices(db, world.caller, world.workspace_id, { q, fleet: [world.fleetB] }));
    const searched = await itemsOf(searchDevices(db, world.workspace_id, { query: parseQuery(q), fleetIds: [world.fleetB] }));

    expect(found.map((d) => d.id)).toEqual(expected(q, [world.fleetB]));
    expect(searched).toEqual(found);
    expect(searched[0]).toMatchObject({ workspace_name: 'default', fleet_name: 'b' });
  });

  it('sees a change of tags at once', async () => {
    const [first] = world.devices;
    await patchDevice(db, world.caller, world.workspace_id, first.id, { tags: { site: 'naples' } });

    const found = await itemsOf(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "naples"' }));
    await patchDevice(db, world.caller, world.workspace_id, first.id, { tags: { site: first.tags.site } });

    expect(found.map((d) => d.id)).toEqual([first.id]);
    expect(await itemsOf(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "naples"' }))).toEqual([]);
  });

  it('answers a tag clause from the tag index, and drops an entry the device no longer bears out', async () => {
    const { DeleteCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
    const [hidden, other] = world.devices.filter((d) => d.tags.site === 'turin');
    const milan = world.devices.find((d) => d.tags.site === 'milan')!;
    const entry = (deviceId: string, value: string) => ({ pk: `WKS#${world.workspace_id}`, sk: `TAG#site#${value.length}#${value}#${deviceId}` });
    await db.doc.send(new DeleteCommand({ TableName: db.table, Key: entry(hidden.id, 'turin') }));
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...entry(milan.id, 'turin'), device_id: milan.id } }));

    const indexed = await itemsOf(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "turin"' }));
    const onePass = await itemsOf(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site > "t" AND tags.site < "u"' }));
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...entry(hidden.id, 'turin'), device_id: hidden.id } }));
    await db.doc.send(new DeleteCommand({ TableName: db.table, Key: entry(milan.id, 'turin') }));

    expect(indexed.map((d) => d.id)).not.toContain(hidden.id);
    expect(indexed.map((d) => d.id)).toContain(other.id);
    expect(indexed.map((d) => d.id)).not.toContain(milan.id);
    expect(onePass.map((d) => d.id)).toContain(hidden.id);
  });

  it('answers firmware_version from the index, which follows each FOTA done and drops an entry the device no longer bears out', async () => {
    const { DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    const [a, b, c] = world.devices;
    await setDeviceFirmware(db, world.workspace_id, a.id, '1.0');
    await setDeviceFirmware(db, world.workspace_id, b.id, '1.0');
    await setDeviceFirmware(db, world.workspace_id, c.id, '1.0');
    await setDeviceFirmware(db, world.workspace_id, c.id, '2.0'); // its 1.0 entry goes
    const found = async (q: string) => (await itemsOf(listDevices(db, world.caller, world.workspace_id, { q }))).map((d) => d.id);
    const entries = (await entriesOf(world.workspace_id)).filter((sk) => sk.startsWith('TAG#$firmware_version#'));

    expect(await found('firmware_version = "1.0"')).toEqual([a.id, b.id]);
    expect(await found('firmware_version IN ("2.0", "3.0")')).toEqual([c.id]);
    expect(entries.sort()).toEqual(
      [`TAG#$firmware_version#3#1.0#${a.id}`, `TAG#$firmware_version#3#1.0#${b.id}`, `TAG#$firmware_version#3#2.0#${c.id}`].sort(),
    );
    // Read from the index: a device whose entry is gone is not found there, but is by one pass.
    await db.doc.send(new DeleteCommand({ TableName: db.table, Key: { pk: `WKS#${world.workspace_id}`, sk: `TAG#$firmware_version#3#1.0#${b.id}` } }));
    expect(await found('firmware_version = "1.0"')).toEqual([a.id]);
    expect(await found('firmware_version >= "1.0" AND firmware_version < "1.1"')).toEqual([a.id, b.id]);
    await setDeviceFirmware(db, world.workspace_id, b.id, '1.0'); // written again: the entry is back
    expect(await found('firmware_version = "1.0"')).toEqual([a.id, b.id]);
  });

  /** A Db that counts what a search sends: Queries of the index's entries of `key`, of the devices (items evaluated), and BatchGetItem calls of devices. */
  const countingDb = (key: string) => {
    const counts = { indexQueries: 0, devicesEvaluated: 0, batchGets: 0 };
    const counting: Db = {
      ...db,
      doc: {
        send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
          const values = command.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
          if (String(values?.[':prefix'] ?? '').startsWith(`TAG#${key}#`)) counts.indexQueries++;
          const keys = (command.input.RequestItems as Record<string, { Keys: Array<{ sk: string }> }> | undefined)?.[db.table]?.Keys ?? [];
          if (command.constructor.name === 'BatchGetCommand' && keys.some((k) => k.sk.startsWith('DEV#'))) counts.batchGets++;
          const output = await (db.doc.send as (c: unknown) => Promise<Record<string, unknown>>)(command);
          if (values?.[':prefix'] === 'DEV#') counts.devicesEvaluated += Number(output.ScannedCount ?? 0);
          return output;
        },
      } as unknown as Db['doc'],
    };
    return { counting, counts };
  };

  it('reads, for a page of a selective indexed query, a probe of devices, then its page of index entries and nothing ahead', async () => {
    const { counting, counts } = countingDb('floor');
    const q = 'tags.floor IN ("1", "2")'; // 12 of the 30 devices: 2 of the probe's 5, under half

    const { items, next } = await pageOf(listDevices(counting, world.caller, world.workspace_id, { q, limit: 4 }));
    await new Promise((resolve) => setImmediate(resolve)); // a read ahead would have been sent by now

    expect(items.map((d) => d.id)).toEqual(expected(q).slice(0, 4));
    expect(next).not.toBeNull();
    // the probe: the page's size (4 and the one past it), then one Query per value of the clause, from where the probe ended
    expect(counts.devicesEvaluated).toBe(5);
    expect(counts.indexQueries).toBe(2);
    expect(counts.batchGets).toBe(1);
  });

  it('reads a page of a broad indexed query in one pass, without the index', async () => {
    const { counting, counts } = countingDb('site');
    const q = 'tags.site IN ("milan", "rome")'; // 20 of the 30 devices

    const { items, next } = await pageOf(listDevices(counting, world.caller, world.workspace_id, { q, limit: 4 }));
    const paged = await allPages((cursor) => listDevices(counting, world.caller, world.workspace_id, { q, limit: 4, cursor }));

    expect(items.map((d) => d.id)).toEqual(expected(q).slice(0, 4));
    expect(next).not.toBeNull();
    expect(paged.ids).toEqual(expected(q));
    expect(counts.indexQueries).toBe(0);
    expect(counts.batchGets).toBe(0);
  });

  it('hands a page over from one pass to the index where the matches thin out, exactly, with and without fleets', async () => {
    // A workspace of its own: 5 devices tagged wave "a", 7 not, then 1 in 6; every other one in fleet b.
    const account = await newAccount(db);
    const fleetB = (await createFleet(db, account.caller, account.workspace_id, { name: 'b', description: '' })).id;
    const devices: Device[] = [];
    for (let i = 0; i < 30; i++)
      devices.push(
        await createDevice(db, account.caller, account.workspace_id, {
          name: `w${String(i).padStart(2, '0')}`,
          phys_id: '',
          fleet_id: i % 2 ? fleetB : undefined,
          tags: { wave: i < 5 || (i >= 12 && i % 6 === 0) ? 'a' : 'b' },
        }),
      );
    const q = 'tags.wave = "a"';
    const want = (fleet?: string[]) => devices.filter((d) => d.tags.wave === 'a' && (!fleet || fleet.includes(d.fleet_id))).map((d) => d.id);
    const { counting, counts } = countingDb('wave');

    // 7 and the one past it: the probe of 8 finds 5, one pass reads on (6 more) until under half match, then the index.
    const { items } = await pageOf(listDevices(counting, account.caller, account.workspace_id, { q, limit: 7 }));

    expect(items.map((d) => d.id)).toEqual(want().slice(0, 7));
    expect(counts.indexQueries).toBe(1);
    expect(counts.devicesEvaluated).toBeGreaterThan(8);
    expect(counts.devicesEvaluated).toBeLessThan(30);
    for (const limit of [1, 2, 3, 7, 20])
      for (const fleet of [undefined, [fleetB]]) {
        const paged = await allPages((cursor) => listDevices(db, account.caller, account.workspace_id, { q, limit, cursor, fleet }));
        expect({ limit, fleet, ids: paged.ids }).toEqual({ limit, fleet, ids: want(fleet) });
      }
  });

  it('answers an indexed page’s identities from its devices’ items, with no read of identities; a device made before reads its own', async () => {
    const { createIdentity, revokeIdentity } = await import('../../../lambdas/domain/registry/identities');
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const url = 'https://devices.example.com/v3/device';
    const turin = world.devices.filter((d) => d.tags.site === 'turin');
    const make = (deviceId: string) => createIdentity(db, world.caller, world.workspace_id, deviceId, { type: 'sym' }, url);
    for (const device of turin.slice(0, 4)) await make(device.id);
    // a second identity, revoked: the device's item lists the first alone
    const revoked = await make(turin[0].id);
    await revokeIdentity(db, world.caller, world.workspace_id, turin[0].id, revoked.identity.id);
    // a device written before devices listed their identities: its item has no list
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: { pk: `WKS#${world.workspace_id}`, sk: `DEV#${turin[3].id}` },
        UpdateExpression: 'REMOVE active_identities',
      }),
    );
    const identityReads: string[] = [];
    const counting: Db = {
      ...db,
      doc: {
        send: (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
          const values = Object.values((command.input.ExpressionAttributeValues as Record<string, unknown> | undefined) ?? {});
          if (command.constructor.name === 'QueryCommand' && values.some((v) => String(v).startsWith('IDN#')))
            identityReads.push(String(values.find((v) => String(v).startsWith('IDN#'))));
          return (db.doc.send as (c: unknown) => Promise<unknown>)(command);
        },
      } as unknown as Db['doc'],
    };
    const q = 'tags.site = "turin"'; // 1 of the probe's 5: the index
    const page = async () => (await pageOf(listDevices(counting, world.caller, world.workspace_id, { q, limit: 5 }))).items;

    const items = await page();

    expect(items.map((d) => d.id)).toEqual(expected(q).slice(0, 5));
    for (const device of items) expect(device.identities).toEqual((await getDevice(db, world.caller, world.workspace_id, device.id)).identities);
    expect(items.map((d) => d.identities?.length ?? 0)).toEqual([1, 1, 1, 1, 0]);
    // One Query, for the device made before (of its own identities), none for the others.
    expect(identityReads).toEqual([`IDN#${turin[3].id}#`]);

    // Its next identity writes its whole list: then no identity is read at all.
    await make(turin[3].id);
    identityReads.length = 0;
    const again = await page();
    expect(again.map((d) => d.identities?.length ?? 0)).toEqual([1, 1, 1, 2, 0]);
    for (const device of again) expect(device.identities).toEqual((await getDevice(db, world.caller, world.workspace_id, device.id)).identities);
    expect(identityReads).toEqual([]);
  });

  it('reads a value’s index entries as a key range, and only that value’s', async () => {
    const { DeleteCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
    // The key range's end (BETWEEN includes it): the one key just past the value's entries, which no entry has.
    const end = { pk: `WKS#${world.workspace_id}`, sk: 'TAG#site#5#milan$' };
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...end, device_id: world.devices[1].id } }));
    const conditions: string[] = [];
    const counting: Db = {
      ...db,
      doc: {
        send: async (command: { input: Record<string, unknown> }) => {
          const values = command.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
          if (String(values?.[':prefix'] ?? '').startsWith('TAG#site#')) conditions.push(String(command.input.KeyConditionExpression));
          return (db.doc.send as (c: unknown) => Promise<unknown>)(command);
        },
      } as unknown as Db['doc'],
    };
    const q = 'tags.site = "milan"';

    const whole = await itemsOf(listDevices(counting, world.caller, world.workspace_id, { q }));
    const paged = await allPages((cursor) => listDevices(counting, world.caller, world.workspace_id, { q, limit: 3, cursor }));
    await db.doc.send(new DeleteCommand({ TableName: db.table, Key: end }));

    expect(whole.map((d) => d.id)).toEqual(expected(q));
    expect(paged.ids).toEqual(expected(q));
    // DynamoDB Local reads a partition from its start for begins_with: a key range starts where the value's entries do.
    expect(conditions.length).toBeGreaterThan(0);
    expect(conditions.every((c) => c.includes('BETWEEN') && !c.includes('begins_with'))).toBe(true);
  });

  it('refuses a cursor of another query, and a malformed query with its position', async () => {
    const { next } = await pageOf(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "milan"', limit: 2 }));

    await expect(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "rome"', cursor: next! })).rejects.toMatchObject({
      details: [{ field: 'query.cursor' }],
    });
    await expect(listDevices(db, world.caller, world.workspace_id, { cursor: next! })).rejects.toThrow(ValidationError);
    await expect(listDevices(db, world.caller, world.workspace_id, { q: 'tags.site = "milan" AND tags.model' })).rejects.toMatchObject({
      details: [{ field: 'query.q', message: expect.stringContaining('at character 35') }],
    });
  });
});
