import { reportsDesired } from '../../../lambdas/domain/fleet-ops/state-rollouts';
import { rolloutMovesOf } from '../../../lambdas/domain/fleet-ops/state-reports';
import { desiredByAfter } from '../../../lambdas/domain/state/document';

describe('reportsDesired: whether a device has applied a state rollout’s keys', () => {
  it.each([
    ['every key deep-equal, other reported keys aside', { interval: 60, mode: { a: [1, 2] }, fw: '1.0' }, { interval: 60, mode: { a: [1, 2] } }, true],
    ['one key differs deep inside', { interval: 60, mode: { a: [1] } }, { interval: 60, mode: { a: [1, 2] } }, false],
    ['one key missing', { interval: 60 }, { interval: 60, mode: 'eco' }, false],
    ['a type differs (the string "60")', { interval: '60' }, { interval: 60 }, false],
    ['a removed key (null) not reported', { other: 1 }, { flag: null }, true],
    ['a removed key (null) reported as null', { flag: null }, { flag: null }, true],
    ['a removed key still reported', { flag: true }, { flag: null }, false],
    ['nothing reported yet', undefined, { interval: 60 }, false],
    ['object keys in another order', { mode: { b: 2, a: 1 } }, { mode: { a: 1, b: 2 } }, true],
  ])('%s', (_what, reported, desired, expected) => {
    expect(reportsDesired(reported as Record<string, unknown> | undefined, desired)).toBe(expected);
  });
});

describe('desiredByAfter: the state rollouts behind each desired key', () => {
  const desired = { interval: 60, mode: 'eco' };
  it('gives a key set to a new value to the rollout alone, and to none for a per-device change', () => {
    expect(desiredByAfter(desired, { interval: ['rol-a'] }, { interval: 30 }, 'rol-b')).toEqual({ interval: ['rol-b'] });
    expect(desiredByAfter(desired, { interval: ['rol-a'], mode: ['rol-a'] }, { interval: 30 })).toEqual({ mode: ['rol-a'] });
  });
  it('keeps the rollouts of a key set to the value it holds, adding the new one last', () => {
    expect(desiredByAfter(desired, { interval: ['rol-a'] }, { interval: 60 }, 'rol-b')).toEqual({ interval: ['rol-a', 'rol-b'] });
    expect(desiredByAfter(desired, { interval: ['rol-a'] }, { interval: 60 })).toEqual({ interval: ['rol-a'] });
  });
  it('holds a removal: a key removed where it was absent keeps its rollouts, one removed where set is the remover’s', () => {
    expect(desiredByAfter(desired, { flag: ['rol-a'] }, { flag: null }, 'rol-b')).toEqual({ flag: ['rol-a', 'rol-b'] });
    expect(desiredByAfter(desired, { mode: ['rol-a'] }, { mode: null }, 'rol-b')).toEqual({ mode: ['rol-b'] });
    expect(desiredByAfter(desired, { mode: ['rol-a'] }, { mode: null })).toEqual({});
  });
  it('names at most 8 rollouts per key, dropping the oldest', () => {
    const many = Array.from({ length: 8 }, (_, i) => `rol-${i}`);
    expect(desiredByAfter(desired, { interval: many }, { interval: 60 }, 'rol-new').interval).toEqual([...many.slice(1), 'rol-new']);
  });
});

describe('rolloutMovesOf: what a device’s state change does to the state rollouts behind its keys', () => {
  const released = { desired: { interval: 60, flag: 1 }, desired_by: { interval: ['rol-a'], flag: ['rol-a'] }, reported: { interval: 30 }, version: 2 };
  it('ends done a rollout whose every key is now reported, once', () => {
    const applied = { ...released, reported: { interval: 60, flag: 1 } };
    expect(rolloutMovesOf({ before: released, after: applied })).toEqual({ done: ['rol-a'], superseded: [] });
    expect(rolloutMovesOf({ before: applied, after: { ...applied, reported: { ...applied.reported, other: 2 } } })).toEqual({ done: [], superseded: [] });
  });
  it('leaves a rollout pending while one of its keys is not reported', () => {
    expect(rolloutMovesOf({ before: released, after: { ...released, reported: { interval: 60 } } }).done).toEqual([]);
  });
  it('ends done at release a rollout the device already reports', () => {
    const before = { desired: {}, reported: { interval: 60, flag: 1 }, version: 1 };
    expect(rolloutMovesOf({ before, after: { ...released, reported: before.reported } }).done).toEqual(['rol-a']);
  });
  it('supersedes a rollout a later change took a key from, naming the key (a removal included)', () => {
    const changed = { ...released, desired: { interval: 30, flag: 1 }, desired_by: { flag: ['rol-a'], interval: ['rol-b'] }, version: 3 };
    // The device reports 30 already: the new rollout is applied at its release.
    expect(rolloutMovesOf({ before: released, after: changed })).toEqual({ done: ['rol-b'], superseded: [['rol-a', 'interval']] });
    const removed = { ...released, desired: { interval: 60 }, desired_by: { interval: ['rol-a'] }, version: 3 };
    expect(rolloutMovesOf({ before: released, after: removed }).superseded).toEqual([['rol-a', 'flag']]);
  });
  it('moves nothing for a device in no state rollout', () => {
    const plain = { desired: { interval: 60 }, reported: {}, version: 1 };
    expect(rolloutMovesOf({ before: plain, after: { ...plain, reported: { interval: 60 } } })).toEqual({ done: [], superseded: [] });
  });
});
