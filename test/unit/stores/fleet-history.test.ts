import { FLEET_HISTORY_RETENTION_MS, fleetAtSnapshot, historyAfterMove, type FleetStay } from '../../../lambdas/stores/fleet-history';

const NOW = Date.parse('2026-11-22T12:00:00.000Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const stay = (fleet_id: string, epoch: number, at = ago(0)): FleetStay => ({ fleet_id, epoch, at });

describe('fleetAtSnapshot', () => {
  it.each([
    [0, undefined],
    [1, 'a'], // created while the clock read 0: there at snapshot 1
    [3, 'a'],
    [4, 'b'], // moved while the clock read 3
    [7, 'b'],
    [8, 'c'],
    [100, 'c'],
  ])('at snapshot %d the device was in %s', (snapshot, fleet) => {
    const device = { fleet_id: 'c', fleet_history: [stay('a', 0), stay('b', 3), stay('c', 7)] };

    expect(fleetAtSnapshot(device, snapshot)).toBe(fleet);
  });

  it('places a device without a history in its fleet at every snapshot', () => {
    expect(fleetAtSnapshot({ fleet_id: 'a' }, 1)).toBe('a');
    expect(fleetAtSnapshot({ fleet_id: 'a', fleet_history: [] }, 9)).toBe('a');
  });

  it('leaves out a device created at or after the snapshot', () => {
    expect(fleetAtSnapshot({ fleet_id: 'a', fleet_history: [stay('a', 5)] }, 5)).toBeUndefined();
  });
});

describe('historyAfterMove', () => {
  it('adds the move as the newest stay', () => {
    expect(historyAfterMove([stay('a', 0)], stay('b', 2), NOW)).toEqual([stay('a', 0), stay('b', 2)]);
  });

  it('replaces a stay of the same epoch: no snapshot lies between two moves that saw one clock', () => {
    expect(historyAfterMove([stay('a', 0), stay('b', 2)], stay('c', 2), NOW)).toEqual([stay('a', 0), stay('c', 2)]);
  });

  it('drops stays whose successor began before the retention, and keeps the newest of those', () => {
    const old = FLEET_HISTORY_RETENTION_MS + 60_000;
    const stays = [stay('a', 0, ago(3 * old)), stay('b', 1, ago(2 * old)), stay('c', 2, ago(old)), stay('d', 5, ago(1000))];

    const after = historyAfterMove(stays, stay('e', 6), NOW);

    // 'c' began before the cutoff but ended after it: a running scheduling may still ask for it.
    expect(after.map((s) => s.fleet_id)).toEqual(['c', 'd', 'e']);
    expect(fleetAtSnapshot({ fleet_id: 'e', fleet_history: after }, 5)).toBe('c');
  });

  it('keeps the only stay however old it is', () => {
    const stays = [stay('a', 0, ago(10 * FLEET_HISTORY_RETENTION_MS))];

    expect(historyAfterMove(stays, stay('b', 3), NOW)).toEqual([...stays, stay('b', 3)]);
  });
});
