import { rolloutEffectOf } from '../../../lambdas/domain/fleet-ops/rollout-counts';
import { directionOf } from '../../../lambdas/domain/fleet-ops/registry-events';
import type { JobStatus } from '../../../lambdas/schemas/job';

const item = (status: JobStatus, rollout_id?: string, scheduled_at = '2026-01-01T00:00:00.000Z', updated_at = '2026-01-01T00:01:00.000Z') => ({
  status,
  scheduled_at,
  updated_at,
  device_id: 'dev-1',
  workspace_id: 'wks-1',
  ...(rollout_id ? { rollout_id } : {}),
});

const sums = (effect: ReturnType<typeof rolloutEffectOf>) =>
  effect.deltas.map((d) => [d.rollout_id, d.total, Object.values(d.counts).reduce((a, b) => a + (b ?? 0), 0)]);

describe('how a job’s change counts in its rollouts', () => {
  it.each([
    // Its scheduling counted it, in the transaction that wrote it.
    ['created pending', undefined, item('pending', 'rol-a'), []],
    ['created queued', undefined, item('queued', 'rol-a'), []],
    ['released', item('queued', 'rol-a'), item('pending', 'rol-a'), [{ rollout_id: 'rol-a', total: 0, counts: { queued: -1, pending: 1 } }]],
    ['answered', item('pending', 'rol-a'), item('done', 'rol-a'), [{ rollout_id: 'rol-a', total: 0, counts: { pending: -1, done: 1 } }]],
    ['in progress again (a new message)', item('in_progress', 'rol-a'), item('in_progress', 'rol-a'), []],
    ['a job of no rollout', item('pending'), item('done'), []],
  ] as const)('%s', (_what, before, after, deltas) => {
    const effect = rolloutEffectOf(before, after);

    expect(effect.deltas).toEqual(deltas.map((d) => ({ workspace_id: 'wks-1', ...d })));
    expect(effect.superseded).toBeUndefined();
  });

  it('counts a pending job another scheduling replaced as canceled in its rollout (the new one counted it when writing it)', () => {
    const effect = rolloutEffectOf(item('pending', 'rol-a'), item('pending', 'rol-b', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'));

    expect(effect.deltas).toEqual([{ workspace_id: 'wks-1', rollout_id: 'rol-a', total: 0, counts: { pending: -1, canceled: 1 } }]);
    expect(effect.superseded).toMatchObject({ status: 'canceled', updated_at: '2026-01-02T00:00:00.000Z', item: { rollout_id: 'rol-a' } });
  });

  it('leaves an ended job in its rollout as it ended when a single-device scheduling replaces it', () => {
    const effect = rolloutEffectOf(item('failed', 'rol-a'), item('pending', undefined, '2026-01-02T00:00:00.000Z'));

    expect(effect.deltas).toEqual([]);
    expect(effect.superseded).toMatchObject({ status: 'failed', updated_at: '2026-01-01T00:01:00.000Z' });
  });

  it('only ever moves a device from a state to another: counts keep adding up to the total, whatever the change', () => {
    const statuses: JobStatus[] = ['queued', 'pending', 'in_progress', 'done', 'failed', 'timed_out', 'canceled'];
    for (const a of statuses) {
      for (const b of statuses) {
        for (const [ra, rb] of [
          ['rol-a', 'rol-a'],
          ['rol-a', 'rol-b'],
          [undefined, 'rol-b'],
          ['rol-a', undefined],
        ] as const) {
          const effect = rolloutEffectOf(item(a, ra), item(b, rb, ra === rb ? undefined : '2026-01-02T00:00:00.000Z'));
          for (const [, total, counted] of sums(effect)) expect(counted).toBe(total);
        }
      }
    }
  });
});

describe('the direction of a job’s event', () => {
  const at = (status: string, message?: string, scheduled_at = 's1') => ({ status, scheduled_at, ...(message ? { message } : {}) });

  it.each([
    ['scheduled', undefined, at('pending'), 'c2d'],
    ['scheduled queued', undefined, at('queued'), 'c2d'],
    ['rescheduled', at('done'), at('pending', undefined, 's2'), 'c2d'],
    ['released', at('queued'), at('pending'), 'c2d'],
    ['canceled', at('pending'), at('canceled'), 'c2d'],
    ['timed out', at('in_progress'), at('timed_out'), 'c2d'],
    ['reported done', at('pending'), at('done'), 'd2c'],
    ['reported failed', at('in_progress'), at('failed'), 'd2c'],
    ['reported progress', at('pending'), at('in_progress', '10%'), 'd2c'],
    ['reported more progress', at('in_progress', '10%'), at('in_progress', '60%'), 'd2c'],
    ['rewritten unchanged', at('pending'), at('pending'), undefined],
  ] as const)('%s: %s', (_what, before, after, direction) => {
    expect(directionOf(before, after)).toBe(direction);
  });
});
