import { NameSchema, TokenSchema, WorkspaceIdSchema } from '../../../lambdas/schemas/common';
import { CreateDeviceBodySchema } from '../../../lambdas/schemas/device';
import { ScheduleJobBodySchema } from '../../../lambdas/schemas/job';

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
  ])('TokenSchema (job names, firmware) accepts %j: %p', (token, valid) => {
    expect(TokenSchema.safeParse(token).success).toBe(valid);
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
