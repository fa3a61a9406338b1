import { NameSchema, PathTokenSchema, TokenSchema, WorkspaceIdSchema } from '../../../lambdas/schemas/common';
import { CreateDeviceBodySchema } from '../../../lambdas/schemas/device';
import { DataPointInputSchema, DeviceEventInputSchema, JobResultBodySchema } from '../../../lambdas/schemas/device-api';
import { ScheduleJobBodySchema } from '../../../lambdas/schemas/job';
import { JSON_MAX_DEPTH, JSON_RULES } from '../../../lambdas/shared/json';

/** `levels` objects and arrays within each other, alternating, around an awkward leaf. */
const nested = (levels: number): unknown => (levels === 0 ? { '': '😀\uffff', n: 1e300 } : levels % 2 ? [nested(levels - 1)] : { a: nested(levels - 1) });

describe('limits of names, tokens and IDs', () => {
  it.each([
    ['a', true],
    ['x'.repeat(128), true],
    ['x'.repeat(129), false],
    ['', false],
    ['   ', false],
  ])('NameSchema accepts %j: %p', (name, valid) => {
    expect(NameSchema.safeParse(name).success).toBe(valid);
  });

  it.each([
    ['reboot', true],
    ['fw_1.2-rc', true],
    ['x'.repeat(64), true],
    ['x'.repeat(65), false],
    ['has space', false],
    ['slash/no', false],
    ['', false],
  ])('TokenSchema (tags, firmware in a device’s report) accepts %j: %p', (token, valid) => {
    expect(TokenSchema.safeParse(token).success).toBe(valid);
  });

  it.each([
    ['reboot', true],
    ['fw_1.2-rc', true],
    ['.hidden', true],
    ['...', true],
    ['..a', true],
    ['x'.repeat(64), true],
    [`.${'x'.repeat(63)}`, true],
    ['.', false],
    ['..', false],
    ['x'.repeat(65), false],
    [`.${'x'.repeat(64)}`, false],
    ['has space', false],
    ['', false],
  ])('PathTokenSchema (job names, firmware IDs and versions in paths) accepts %j: %p', (token, valid) => {
    expect(PathTokenSchema.safeParse(token).success).toBe(valid);
  });

  it.each([
    ['wks-abcdefghij0123456789', true],
    ['wks-ABCDEFGHIJ0123456789', false],
    ['flt-abcdefghij0123456789', false],
    ['wks-short', false],
  ])('WorkspaceIdSchema accepts %j: %p', (id, valid) => {
    expect(WorkspaceIdSchema.safeParse(id).success).toBe(valid);
  });
});

describe('bodies', () => {
  it('defaults phys_id and leaves fleet_id optional on device creation', () => {
    expect(CreateDeviceBodySchema.parse({ name: 'd' })).toEqual({ name: 'd', phys_id: '' });
  });

  it('caps a job value at 32 KB of JSON and defaults it to {}', () => {
    expect(ScheduleJobBodySchema.parse({})).toEqual({ value: {} });
    expect(ScheduleJobBodySchema.safeParse({ value: { blob: 'x'.repeat(32 * 1024) } }).success).toBe(false);
    expect(ScheduleJobBodySchema.safeParse({ value: [1, 2] }).success).toBe(false);
  });
});

describe('nesting of free-form values', () => {
  // nested(n) ends in a one-level object, so nested(JSON_MAX_DEPTH - 1) is JSON_MAX_DEPTH deep.
  const atLimit = nested(JSON_MAX_DEPTH - 1);
  const overLimit = nested(JSON_MAX_DEPTH);

  it.each([
    ['a job value', ScheduleJobBodySchema, (v: unknown) => ({ value: { v } }), ['value']],
    ['a job result', JobResultBodySchema, (v: unknown) => ({ result: { v } }), ['result']],
    ['a data payload', DataPointInputSchema, (v: unknown) => ({ tag: 't', payload: v }), ['payload']],
    ['an event payload', DeviceEventInputSchema, (v: unknown) => ({ type: 'os_info', payload: v }), ['payload']],
  ] as const)('%s may nest up to the limit, and is refused one level deeper with the limit named', (_what, schema, wrap, path) => {
    // A job value or result is an object holding the value: one level less is left for it.
    const fits = path[0] === 'payload' ? atLimit : nested(JSON_MAX_DEPTH - 2);
    const deeper = path[0] === 'payload' ? overLimit : nested(JSON_MAX_DEPTH - 1);

    const ok = schema.safeParse(wrap(fits));
    const refused = schema.safeParse(wrap(deeper));

    expect(ok.success).toBe(true);
    expect(ok.data).toEqual(wrap(fits));
    expect(refused.error?.issues).toEqual([expect.objectContaining({ path, message: JSON_RULES.depth(JSON_MAX_DEPTH) })]);
  });
});
