import { reportsDesired } from '../../../lambdas/domain/fleet-ops/state-rollouts';

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
