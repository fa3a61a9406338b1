import { eventOfChange } from '../../../lambdas/domain/fleet-ops/registry-events';
import type { Db } from '../../../lambdas/shared/clients';
import type { JobRecord } from '../../../lambdas/stores/job-store';

// A stamped item names its place: the event needs no read, so no table is given.
const db = {} as Db;
const job = (change: Partial<JobRecord>): JobRecord => ({
  name: 'reboot',
  status: 'pending',
  value: {},
  scheduled_at: '2026-11-29T06:00:00.000Z',
  device_id: 'dev-1',
  workspace_id: 'wks-1',
  fleet_id: 'flt-1',
  event_ts: '2026-11-29T06:01:00.000000Z',
  ...change,
});
const cancel = (after: Partial<JobRecord>) => ({
  kind: 'job' as const,
  key: { pk: 'DEV#dev-1', sk: 'JOB#reboot' },
  eventId: 'e1',
  before: job({}),
  after: job({ status: 'canceled', ...after }),
});

describe('the events of the registry stream', () => {
  it('sends a c2d job event for a cancel', async () => {
    expect(await eventOfChange(db, cancel({}))).toMatchObject({ type: 'job', device_id: 'dev-1' });
  });

  it('sends none for the cancels of a device’s deletion: a deleted device’s events stop', async () => {
    expect(await eventOfChange(db, cancel({ device_deleted: true }))).toBeUndefined();
  });
});
