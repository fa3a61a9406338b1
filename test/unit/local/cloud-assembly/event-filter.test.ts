import { eventFilterOf } from '../../../../local/cloud-assembly/event-filter';

/** A DynamoDB stream record as Lambda filters it. */
const record = (eventName: string, sk: string, extra: Record<string, unknown> = {}) => ({
  eventName,
  dynamodb: { Keys: { pk: { S: 'DEV#1' }, sk: { S: sk } }, ...extra },
});
const filterOf = (...patterns: unknown[]) => eventFilterOf({ Filters: patterns.map((p) => ({ Pattern: JSON.stringify(p) })) })!;

describe('eventFilterOf', () => {
  // The stack's own criteria (lib/constructs/registry-stream.ts): one filter per kind of item, ORed.
  const registry = filterOf(
    { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: [{ prefix: 'JOB#' }] } } } },
    { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: [{ prefix: 'FOTA' }] } } } },
  );

  it.each([
    ['a job insert', record('INSERT', 'JOB#reboot'), true],
    ['a FOTA update', record('MODIFY', 'FOTA'), true],
    ['a job removal', record('REMOVE', 'JOB#reboot'), false],
    ['a device insert', record('INSERT', 'DEVICE'), false],
    ['a record without keys', { eventName: 'INSERT' }, false],
  ])('passes the registry criteria for %s: %s', (_what, input, expected) => {
    expect(registry(input)).toBe(expected);
  });

  it.each([
    ['suffix', { a: [{ suffix: '.png' }] }, { a: 'x.png' }, { a: 'x.jpg' }],
    ['equals-ignore-case', { a: [{ 'equals-ignore-case': 'On' }] }, { a: 'ON' }, { a: 'off' }],
    ['anything-but a list', { a: [{ 'anything-but': ['x', 'y'] }] }, { a: 'z' }, { a: 'y' }],
    ['anything-but a prefix', { a: [{ 'anything-but': { prefix: 'tmp' } }] }, { a: 'keep' }, { a: 'tmp1' }],
    ['anything-but on a missing field', { a: [{ 'anything-but': 'x' }] }, { a: 'y' }, { b: 'y' }],
    ['numeric ranges', { n: [{ numeric: ['>', 0, '<=', 5] }] }, { n: 5 }, { n: 0 }],
    ['exists', { a: [{ exists: true }] }, { a: null }, {}],
    ['exists false', { a: [{ exists: false }] }, {}, { a: 1 }],
    ['wildcard', { a: [{ wildcard: 'dev-*-eu' }] }, { a: 'dev-12-eu' }, { a: 'dev-12-us' }],
    ['a null literal', { a: [null] }, { a: null }, {}],
    ['a list in the record (any item)', { a: ['x'] }, { a: ['w', 'x'] }, { a: ['w'] }],
    ['$or', { $or: [{ a: ['x'] }, { b: [1] }] }, { b: 1 }, { a: 'y', b: 2 }],
    ['every field of a pattern', { a: ['x'], b: ['y'] }, { a: 'x', b: 'y' }, { a: 'x', b: 'z' }],
  ])('matches %s', (_what, pattern, matching, other) => {
    const filter = filterOf(pattern);
    expect(filter(matching)).toBe(true);
    expect(filter(other)).toBe(false);
  });

  it('passes every record without filters', () => {
    expect(eventFilterOf(undefined)).toBeUndefined();
    expect(eventFilterOf({ Filters: [] })).toBeUndefined();
  });

  it('refuses an operator it does not know, or a leaf that is not a list, rather than letting records through', () => {
    expect(() => filterOf({ a: [{ cidr: '10.0.0.0/24' }] })).toThrow(/cidr does not run here/);
    expect(() => filterOf({ a: 'x' })).toThrow(/must be a list/);
    expect(() => filterOf({ n: [{ numeric: ['~', 1] }] })).toThrow(/bad numeric/);
    expect(() => eventFilterOf({ Filters: [{ Pattern: '{not json' }] })).toThrow();
  });
});
