import { changedKeys, deltaOf, mergeChanges, validateChanges } from '../../../../lambdas/domain/state/document';
import { ValidationError } from '../../../../lambdas/shared/errors';
import { PatchDeviceStateBodySchema } from '../../../../lambdas/schemas/state';

/** A value nested `levels` objects deep: `{"n": {"n": … 1}}` has `levels` levels. */
const nested = (levels: number): unknown => (levels === 0 ? 1 : { n: nested(levels - 1) });

const fieldOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details.map((d) => d.field);
  }
  throw new Error('accepted');
};

describe('state document rules', () => {
  it('accepts keys of letters, digits, _ and -, any JSON value, null to remove', () => {
    const changes = { interval: 60, 'mode-2': 'eco', a_b: [1, { x: null }], gone: null, Z9: true };

    expect(validateChanges(changes, 'body.desired')).toEqual(changes);
  });

  it.each(['@x', '#x', '_x', 'a.b', '', 'k'.repeat(65), 'é'])('refuses the key %j, naming it', (key) => {
    expect(fieldOf(() => validateChanges({ [key]: 1 }, 'body.desired'))).toEqual([`body.desired.${key}`]);
  });

  it('takes a document nesting 8 deep and refuses one of 9, naming the key', () => {
    // The document is level 1: a key's value of 7 levels makes 8.
    expect(() => validateChanges({ deep: nested(7) }, 'body.desired')).not.toThrow();
    expect(fieldOf(() => validateChanges({ deep: nested(8) }, 'body.desired'))).toEqual(['body.desired.deep']);
  });

  it('takes 16 KB of JSON and refuses 17 KB, naming the side', () => {
    const at = (bytes: number) => ({ big: 'x'.repeat(bytes - '{"big":""}'.length) });
    expect(JSON.stringify(at(16 * 1024))).toHaveLength(16 * 1024);

    expect(() => validateChanges(at(16 * 1024), 'body.desired')).not.toThrow();
    expect(fieldOf(() => validateChanges(at(17 * 1024), 'body.desired'))).toEqual(['body.desired']);
  });

  it('refuses a merge that would leave more than 16 KB, though each change is small', () => {
    const current = { a: 'x'.repeat(10_000) };

    expect(fieldOf(() => mergeChanges(current, {}, { b: 'y'.repeat(10_000) }, '2026-01-01T00:00:00.000Z', 'value.reported'))).toEqual(['value.reported']);
  });

  it('refuses numbers the store cannot keep and empty keys inside values', () => {
    expect(fieldOf(() => validateChanges({ n: 1e200 }, 'body.desired'))).toEqual(['body.desired.n']);
    expect(fieldOf(() => validateChanges({ n: { m: [1e-200] } }, 'body.desired'))).toEqual(['body.desired.n']);
    expect(fieldOf(() => validateChanges({ n: { '': 1 } }, 'body.desired'))).toEqual(['body.desired.n']);
    expect(() => validateChanges({ n: 0, m: -1.5e100, k: 1e-100 }, 'body.desired')).not.toThrow();
  });

  it.each([[[1]], ['text'], [null], [3]])('refuses a side that is not an object: %j', (value) => {
    expect(fieldOf(() => validateChanges(value, 'body.desired'))).toEqual(['body.desired']);
  });

  it('refuses a version that is not a non-negative integer', () => {
    for (const version of [1.5, -1, '3', null]) {
      const parsed = PatchDeviceStateBodySchema.safeParse({ desired: {}, version });
      expect(parsed.success ? 'accepted' : parsed.error.issues[0].path).toEqual(['version']);
    }
  });

  it('merges at the top level: null removes, a value replaces whole, others stay; times follow', () => {
    const { document, times } = mergeChanges(
      { a: 1, b: { x: 1, y: 2 }, c: 'keep' },
      { a: 't0', b: 't0', c: 't0' },
      { a: null, b: { x: 3 }, c: 'keep', d: false },
      't1',
      'body.desired',
    );

    expect(document).toEqual({ b: { x: 3 }, c: 'keep', d: false });
    expect(times).toEqual({ b: 't1', c: 't0', d: 't1' });
  });

  it('computes the delta by deep equality, and the changed keys with null for removed ones', () => {
    const desired = { interval: 60, mode: 'eco', cfg: { a: [1, 2], b: 1 } };
    const reported = { interval: 30, cfg: { b: 1, a: [1, 2] }, fw: '1.2.0' };

    expect(deltaOf(desired, reported)).toEqual({ interval: 60, mode: 'eco' });
    expect(changedKeys({ a: 1, b: { x: 1 }, c: 2 }, { a: 1, b: { x: 2 }, d: 3 })).toEqual({ b: { x: 2 }, c: null, d: 3 });
  });
});
