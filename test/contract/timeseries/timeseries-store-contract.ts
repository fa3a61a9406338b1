import { newId } from '../../../lambdas/shared/ids';
import { PayloadTooLargeError, ValidationError } from '../../../lambdas/shared/errors';
import { formatTime } from '../../../lambdas/shared/timestamps';
import type { DataPoint, PointToStore, RangePoint, TimeseriesQuery, TimeseriesRange, TimeseriesStore } from '../../../lambdas/stores/timeseries';

/** Every point a query yields. */
export const collect = async (points: AsyncIterable<DataPoint>) => {
  const all: DataPoint[] = [];
  for await (const point of points) all.push(point);
  return all;
};

/** Every point a range read yields, and the sizes of its runs. */
export const collectRange = async (runs: AsyncIterable<RangePoint[]>) => {
  const points: RangePoint[] = [];
  const sizes: number[] = [];
  for await (const run of runs) {
    points.push(...run);
    sizes.push(run.length);
  }
  return { points, sizes };
};

/** A range read's point as the query answers it. */
export const asDataPoint = (workspace_id: string, p: RangePoint): DataPoint => ({
  workspace_id,
  fleet_id: p.fleet_id,
  device_id: p.device_id,
  tag: p.tag,
  timestamp_device: formatTime(p),
  timestamp_in: new Date(p.inMs).toISOString(),
  payload: p.payload,
});

const at = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();
const stampAt = (ms: number, us: number) => `${at(ms).slice(0, -1)}${String(us).padStart(3, '0')}Z`;
/** What a query returns of a written point: everything but the write's own fields. */
const asRead = ({ sequence: _sequence, origin: _origin, ...point }: PointToStore): DataPoint => point;

/** A workspace with two fleets and three devices, and a point builder for it. */
const scene = () => {
  const workspace_id = newId('wks');
  const fleets = [newId('flt'), newId('flt')];
  const devices = [newId('dev'), newId('dev'), newId('dev')].sort();
  const point = (device: number, tag: string, ms: number, payload: unknown = { v: ms }, extra: Partial<PointToStore> = {}): PointToStore => ({
    workspace_id,
    fleet_id: fleets[0],
    device_id: devices[device],
    tag,
    timestamp_device: at(ms),
    timestamp_in: at(ms + 5),
    payload,
    ...extra,
  });
  const query = (q: Partial<TimeseriesQuery> = {}): TimeseriesQuery => ({ workspaceId: workspace_id, from: 0, size: 1000, order: 'asc', ...q });
  const range = (r: Partial<TimeseriesRange> = {}): TimeseriesRange => ({ workspaceId: workspace_id, ...r });
  /** A point the cloud stamped `us` microseconds into millisecond `ms`, from `origin`. */
  const stamped = (device: number, tag: string, ms: number, us: number, origin: string, payload: unknown = { v: ms }) =>
    point(device, tag, ms, payload, { timestamp_device: stampAt(ms, us), origin });
  return { workspace_id, fleets, devices, point, stamped, query, range };
};

const keyOf = (p: DataPoint) => `${p.timestamp_device}|${p.device_id}|${p.tag}`;

/**
 * The contract every time-series backend honours (DESIGN §5): dedup on (device, tag,
 * timestamp_device) with the first write winning, the time range, order with its tie-break,
 * filters, paging that never overlaps or skips, and tenant isolation. `makeStore` gives a store
 * on an empty table.
 */
export const describeTimeseriesStore = (name: string, makeStore: () => Promise<TimeseriesStore>) => {
  describe(`time-series store contract: ${name}`, () => {
    let store: TimeseriesStore;
    beforeAll(async () => {
      store = await makeStore();
    });

    it('returns a written point with every field as written', async () => {
      const { point, query } = scene();
      const written = [
        point(0, 'weather', 0, { temp: 21.5, ok: true, list: [1, 'two', null], nested: { deep: 'é✓' } }),
        point(1, 'weather', 1, [1, 2, 3]),
        point(2, 'weather', 2, 'text'),
        point(0, 'raw', 3, 42),
        point(0, 'none', 4, null),
      ];

      const result = await store.write(written);

      expect(result).toEqual({ written: 5, discarded: 0 });
      expect(await collect(store.query(query()))).toEqual(written);
    });

    it('keeps the first write of a (device, tag, timestamp_device) and counts later ones as discarded', async () => {
      const { point, query, fleets } = scene();
      const first = point(0, 'weather', 0, { v: 'first' });
      await store.write([first]);

      const result = await store.write([point(0, 'weather', 0, { v: 'second' }, { fleet_id: fleets[1], timestamp_in: at(999) })]);

      expect(result).toEqual({ written: 0, discarded: 1 });
      expect(await collect(store.query(query()))).toEqual([first]);
    });

    it('keeps the first of duplicates within one write', async () => {
      const { point, query } = scene();

      // One request: the same arrival time, places 0, 1, 2 in it.
      const result = await store.write([
        point(0, 't', 0, 'a', { sequence: 0 }),
        point(1, 't', 0, 'b', { sequence: 1 }),
        point(0, 't', 0, 'c', { sequence: 2 }),
      ]);

      expect(result).toEqual({ written: 2, discarded: 1 });
      expect((await collect(store.query(query()))).map((p) => p.payload)).toEqual(['a', 'b']);
    });

    it('discards every point when the same batch is written again', async () => {
      const { point, query } = scene();
      const batch = Array.from({ length: 250 }, (_, i) => point(i % 3, `tag-${i % 4}`, i));
      expect(await store.write(batch)).toEqual({ written: 250, discarded: 0 });

      const again = await store.write(batch);

      expect(again).toEqual({ written: 0, discarded: 250 });
      expect(await collect(store.query(query()))).toHaveLength(250);
    });

    it('returns one point per key when concurrent writers race, the same one in either order', async () => {
      const { point, query } = scene();
      const values = ['a', 'b', 'c', 'd', 'e'];
      const contenders = values.map((v) => [point(0, 'race', 0, v), point(1, 'race', 1, v)]);

      const results = await Promise.all(contenders.map((batch) => store.write(batch)));

      const ascending = await collect(store.query(query()));
      expect(results.every((r) => r.written + r.discarded === 2)).toBe(true);
      expect(ascending).toHaveLength(2);
      expect(values).toContain(ascending[0].payload);
      expect(values).toContain(ascending[1].payload);
      expect(await collect(store.query(query({ order: 'desc' })))).toEqual([...ascending].reverse());
    });

    it('keeps a device’s series when it changes fleet: fleet is an attribute', async () => {
      const { point, query, fleets } = scene();

      await store.write([point(0, 'weather', 0, 1, { fleet_id: fleets[0] }), point(0, 'weather', 1, 2, { fleet_id: fleets[1] })]);

      expect((await collect(store.query(query()))).map((p) => [p.fleet_id, p.payload])).toEqual([
        [fleets[0], 1],
        [fleets[1], 2],
      ]);
    });

    it('applies start <= timestamp_device < end', async () => {
      const { point, query } = scene();
      await store.write([0, 10, 20, 30].map((ms) => point(0, 't', ms)));

      const between = await collect(store.query(query({ start: at(10), end: at(30) })));
      const fromStart = await collect(store.query(query({ start: at(20) })));
      const untilEnd = await collect(store.query(query({ end: at(10) })));
      const empty = await collect(store.query(query({ start: at(30), end: at(30) })));
      const reversed = await collect(store.query(query({ start: at(30), end: at(0) })));

      expect(between.map((p) => p.timestamp_device)).toEqual([at(10), at(20)]);
      expect(fromStart.map((p) => p.timestamp_device)).toEqual([at(20), at(30)]);
      expect(untilEnd.map((p) => p.timestamp_device)).toEqual([at(0)]);
      expect(empty).toEqual([]);
      expect(reversed).toEqual([]);
    });

    it('orders by timestamp_device, then device, then tag; descending is the exact reverse', async () => {
      const { point, query } = scene();
      // Written out of order, with ties on the timestamp across devices and tags.
      const points = [point(2, 'b', 5), point(0, 'b', 5), point(1, 'a', 5), point(0, 'a', 5), point(2, 'a', 1), point(1, 'z', 9), point(0, 'a', 0)];
      await store.write(points);

      const asc = await collect(store.query(query({ order: 'asc' })));
      const desc = await collect(store.query(query({ order: 'desc' })));

      const expected = [...points].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
      expect(asc.map(keyOf)).toEqual(expected.map(keyOf));
      expect(desc.map(keyOf)).toEqual([...expected].reverse().map(keyOf));
    });

    it('pages through every point exactly once, whatever the page size and order', async () => {
      const { point, query } = scene();
      // 3 devices × 2 tags × 5 timestamps: six points tie on each timestamp, spread over shards.
      const points = [0, 1, 2].flatMap((d) => ['a', 'b'].flatMap((tag) => [0, 1, 2, 3, 4].map((ms) => point(d, tag, ms))));
      await store.write(points);
      for (const order of ['asc', 'desc'] as const) {
        const all = (await collect(store.query(query({ order })))).map(keyOf);
        for (const size of [1, 2, 5, 7, 40]) {
          const pages: string[] = [];
          for (let from = 0; from * size < all.length + size; from++) {
            pages.push(...(await collect(store.query(query({ order, from, size })))).map(keyOf));
          }

          expect(pages).toEqual(all);
        }
      }
    });

    it('returns the second record with from=1 and size=1, and nothing past the end or for size 0', async () => {
      const { point, query } = scene();
      await store.write([point(0, 't', 0), point(0, 't', 1), point(0, 't', 2)]);

      const second = await collect(store.query(query({ from: 1, size: 1, order: 'desc' })));
      const past = await collect(store.query(query({ from: 3, size: 1 })));
      const none = await collect(store.query(query({ size: 0 })));

      expect(second.map((p) => p.timestamp_device)).toEqual([at(1)]);
      expect(past).toEqual([]);
      expect(none).toEqual([]);
    });

    it('filters by several devices and several tags, together with the time range', async () => {
      const { point, query, devices } = scene();
      const points = [0, 1, 2].flatMap((d) => ['a', 'b', 'c'].flatMap((tag) => [0, 1, 2].map((ms) => point(d, tag, ms))));
      await store.write(points);

      const byDevice = await collect(store.query(query({ devices: [devices[0], devices[2]] })));
      const byTag = await collect(store.query(query({ tags: ['a', 'c'] })));
      const both = await collect(store.query(query({ devices: [devices[1]], tags: ['b'], start: at(1) })));
      const unknown = await collect(store.query(query({ devices: [newId('dev')] })));

      expect(byDevice).toHaveLength(18);
      expect(new Set(byDevice.map((p) => p.device_id))).toEqual(new Set([devices[0], devices[2]]));
      expect(byTag).toHaveLength(18);
      expect(new Set(byTag.map((p) => p.tag))).toEqual(new Set(['a', 'c']));
      expect(both.map(keyOf)).toEqual([point(1, 'b', 1), point(1, 'b', 2)].map(keyOf));
      expect(unknown).toEqual([]);
    });

    it('filters by the fleet a point was stored with, together with devices and tags', async () => {
      const { point, query, fleets, devices } = scene();
      // The device moved from the first fleet to the second between its points.
      await store.write([
        point(0, 'a', 0, 1, { fleet_id: fleets[0] }),
        point(0, 'a', 1, 2, { fleet_id: fleets[1] }),
        point(1, 'b', 2, 3, { fleet_id: fleets[1] }),
      ]);

      const first = await collect(store.query(query({ fleets: [fleets[0]] })));
      const second = await collect(store.query(query({ fleets: [fleets[1]], tags: ['a'] })));
      const both = await collect(store.query(query({ fleets: fleets, devices: [devices[1]] })));
      const none = await collect(store.query(query({ fleets: [newId('flt')] })));

      expect(first.map((p) => p.payload)).toEqual([1]);
      expect(second.map((p) => p.payload)).toEqual([2]);
      expect(both.map((p) => p.payload)).toEqual([3]);
      expect(none).toEqual([]);
    });

    it('reads a range as the ascending query answers it, deduplicated, in runs, with every filter', async () => {
      const { point, stamped, query, range, devices, fleets } = scene();
      const points = Array.from({ length: 1200 }, (_, i) => point(i % 3, `t${i % 4}`, Math.floor(i / 2), { i }, { fleet_id: fleets[i % 2] }));
      await store.write(points);
      // A replay of a device time (dropped) and a cloud-stamped point written twice under two stamps (kept once).
      await store.write([point(0, 't0', 0, 'replay', { timestamp_in: at(9_999) }), stamped(1, 't1', 10, 7, 'aaaaaaaaaaaaaaaa', 'cloud')]);
      await store.write([stamped(1, 't1', 10, 9, 'aaaaaaaaaaaaaaaa', 'cloud')]);
      const selections: Array<Partial<TimeseriesRange>> = [
        {},
        { start: at(100), end: at(300) },
        { devices: [devices[2]], tags: ['t1', 't3'] },
        { fleets: [fleets[1]], start: at(50) },
      ];

      for (const selection of selections) {
        const { points: read, sizes } = await collectRange(store.readRange(range(selection)));
        const expected = await collect(store.query(query({ ...selection, size: 10_000 })));

        expect(read.map((p) => asDataPoint(expected[0]?.workspace_id ?? '', p))).toEqual(expected);
        expect(sizes.every((n) => n > 0)).toBe(true);
      }
      expect((await collectRange(store.readRange(range()))).sizes.length).toBeLessThan(1202);
      expect(await collectRange(store.readRange(range({ start: at(30), end: at(30) })))).toEqual({ points: [], sizes: [] });
    });

    it('keeps workspaces apart, even for the same device ID, tag and timestamp', async () => {
      const mine = scene();
      const theirs = scene();
      await store.write([mine.point(0, 't', 0, 'mine')]);
      const separately = await store.write([theirs.point(0, 't', 0, 'theirs', { device_id: mine.devices[0] })]);
      const together = await store.write([mine.point(0, 't', 1, 'mine'), theirs.point(0, 't', 1, 'theirs', { device_id: mine.devices[0] })]);

      const result = await collect(store.query(mine.query({ devices: [mine.devices[0]] })));
      const theirResult = await collect(store.query(theirs.query({ devices: [mine.devices[0]] })));

      expect([separately, together]).toEqual([
        { written: 1, discarded: 0 },
        { written: 2, discarded: 0 },
      ]);
      expect(result.map((p) => [p.workspace_id, p.payload])).toEqual([
        [mine.workspace_id, 'mine'],
        [mine.workspace_id, 'mine'],
      ]);
      expect(theirResult.map((p) => [p.workspace_id, p.payload])).toEqual([
        [theirs.workspace_id, 'theirs'],
        [theirs.workspace_id, 'theirs'],
      ]);
    });

    it('stores nothing of a write that holds an invalid point', async () => {
      const { point, query } = scene();

      const invalid = [
        point(0, 'bad tag!', 1),
        point(0, 'good', 2, 1, { timestamp_device: 'yesterday' }),
        point(0, 'good', 3, undefined, { payload: undefined }),
      ];

      await expect(store.write([point(0, 'good', 0), ...invalid])).rejects.toThrow(ValidationError);

      expect(await collect(store.query(query()))).toEqual([]);
    });

    it('rejects an oversize point before writing anything', async () => {
      const { point, query } = scene();

      await expect(store.write([point(0, 'good', 0), point(0, 'big', 1, 'x'.repeat(500 * 1024))])).rejects.toThrow(PayloadTooLargeError);

      expect(await collect(store.query(query()))).toEqual([]);
    });

    it('keeps every cloud-stamped point: two origins are two points, even under the same stamp and payload', async () => {
      const { stamped, query } = scene();
      // Two requests stamped at once by two containers, and a third point a microsecond later.
      const written = [
        stamped(0, 't', 0, 1, 'aaaaaaaaaaaaaaaa', 'same'),
        stamped(0, 't', 0, 1, 'bbbbbbbbbbbbbbbb', 'same'),
        stamped(0, 't', 0, 2, 'cccccccccccccccc', 'same'),
      ];

      const result = await store.write(written);

      const ascending = await collect(store.query(query()));
      expect(result).toEqual({ written: 3, discarded: 0 });
      expect(ascending.map((p) => p.timestamp_device)).toEqual([stampAt(0, 1), stampAt(0, 1), stampAt(0, 2)]);
      expect(await collect(store.query(query({ order: 'desc' })))).toEqual([...ascending].reverse());
    });

    it('stores a cloud-stamped point once when its message comes again, even stamped anew within its millisecond', async () => {
      const { stamped, query } = scene();
      await store.write([stamped(0, 't', 0, 5, 'aaaaaaaaaaaaaaaa', 'p'), stamped(1, 't', 0, 5, 'bbbbbbbbbbbbbbbb', 'q')]);

      // The same messages retried: one keeps its stamp, the other gets an earlier one.
      const again = await store.write([stamped(0, 't', 0, 5, 'aaaaaaaaaaaaaaaa', 'p'), stamped(1, 't', 0, 3, 'bbbbbbbbbbbbbbbb', 'q')]);
      const later = await store.write([stamped(1, 't', 0, 9, 'bbbbbbbbbbbbbbbb', 'q')]);

      const points = await collect(store.query(query()));
      expect(again.written + again.discarded).toBe(2);
      expect(later.written + later.discarded).toBe(1);
      expect(points.map((p) => [p.payload, p.timestamp_device])).toEqual([
        ['q', stampAt(0, 3)],
        ['p', stampAt(0, 5)],
      ]);
      expect(await collect(store.query(query({ order: 'desc' })))).toEqual([...points].reverse());
    });

    it('never takes a cloud stamp for a replay of a device time in the same millisecond', async () => {
      const { point, stamped, query } = scene();

      await store.write([point(0, 't', 0, 'device'), stamped(0, 't', 0, 1, 'aaaaaaaaaaaaaaaa', 'cloud')]);

      expect((await collect(store.query(query()))).map((p) => [p.timestamp_device, p.payload])).toEqual([
        [at(0), 'device'],
        [stampAt(0, 1), 'cloud'],
      ]);
    });

    it('selects to the microsecond: start included, end excluded, finer digits rounded up', async () => {
      const { point, stamped, query } = scene();
      const written = [
        point(0, 't', 0),
        stamped(0, 't', 0, 1, 'aaaaaaaaaaaaaaaa'),
        stamped(0, 't', 0, 500, 'bbbbbbbbbbbbbbbb'),
        stamped(0, 't', 0, 999, 'cccccccccccccccc'),
        point(0, 't', 1),
      ];
      await store.write(written);
      const between = async (start: string, end: string) => (await collect(store.query(query({ start, end })))).map((p) => p.timestamp_device);

      expect(await between(stampAt(0, 500), stampAt(0, 999))).toEqual([stampAt(0, 500)]);
      expect(await between(at(0), stampAt(0, 1))).toEqual([at(0)]);
      expect(await between(`${stampAt(0, 500).slice(0, -1)}0001Z`, at(1))).toEqual([stampAt(0, 999)]);
      expect(await between(stampAt(0, 1), `${at(1).slice(0, -1)}0000001Z`)).toEqual([stampAt(0, 1), stampAt(0, 500), stampAt(0, 999), at(1)]);
      expect(await collect(store.query(query()))).toEqual(written.map(asRead));
    });

    it('reads a large result in order across many pages and lets a reader stop early', async () => {
      const { point, query } = scene();
      const points = Array.from({ length: 3000 }, (_, i) => point(i % 3, `t${i % 5}`, Math.floor(i / 2)));
      await store.write(points);

      const all = await collect(store.query(query({ order: 'desc', size: 5000 })));
      const firstFew: DataPoint[] = [];
      for await (const p of store.query(query({ order: 'desc', size: 5000 }))) {
        firstFew.push(p);
        if (firstFew.length === 3) break;
      }

      expect(all).toHaveLength(3000);
      expect(all.map(keyOf)).toEqual([...points].map(keyOf).sort().reverse());
      expect(firstFew).toEqual(all.slice(0, 3));
    });
  });
};
