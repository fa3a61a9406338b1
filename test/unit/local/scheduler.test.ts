import { until } from '../../../local/ports';
import { scheduledEvent, startSchedule, type RunningSchedule } from '../../../local/scheduler';

const RULE_ARN = 'arn:aws:events:us-east-1:000000000000:rule/sweep';
const base = { rule: 'sweep', function: 'rollout-sweep', ruleArn: RULE_ARN, region: 'us-east-1', account: '000000000000', onError: () => undefined };

describe('startSchedule (a scheduled rule, locally)', () => {
  let schedule: RunningSchedule | undefined;
  afterEach(async () => {
    await schedule?.stop();
    schedule = undefined;
  });

  it('invokes the function with EventBridge’s scheduled event, again and again, and keeps the results', async () => {
    const events: unknown[] = [];
    schedule = startSchedule({ ...base, intervalMs: 20, invoke: async (event) => (events.push(event), events.length) });

    await until(() => schedule!.status().runs >= 3, 'three runs', 10_000);

    const status = schedule.status();
    expect(events[0]).toEqual({
      version: '0',
      id: expect.any(String),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '000000000000',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      region: 'us-east-1',
      resources: [RULE_ARN],
      detail: {},
    });
    // each run's result, in order: the last runs kept (more may have run on a loaded machine before this read)
    const kept = status.recent.length;
    expect(status.recent.map((r) => r.result)).toEqual(Array.from({ length: kept }, (_, i) => status.runs - kept + 1 + i));
    expect([status.failures, status.refused]).toEqual([0, 0]);
  });

  it('stamps its events clockAheadMs ahead of the firing when asked (a test’s clock ahead), as EventBridge never does', async () => {
    const times: number[] = [];
    schedule = startSchedule({ ...base, intervalMs: 20, clockAheadMs: 120_000, invoke: async (event) => void times.push(Date.parse(event.time)) });

    await until(() => times.length >= 1, 'a run', 10_000);

    // The scheduled time (whole seconds) two minutes past the firing.
    expect(times[0] - Date.now()).toBeGreaterThan(110_000);
    expect(times[0] - Date.now()).toBeLessThanOrEqual(120_000);
  });

  it('runs one invocation at a time: a run longer than the interval delays the next', async () => {
    let inFlight = 0;
    let most = 0;
    let release!: () => void;
    const firstRun = new Promise<void>((resolve) => (release = resolve));
    schedule = startSchedule({
      ...base,
      intervalMs: 5,
      invoke: async () => {
        most = Math.max(most, ++inFlight);
        if (schedule!.status().runs === 0) await firstRun;
        inFlight -= 1;
      },
    });
    await until(() => inFlight === 1, 'the first run started', 10_000);
    const started = Date.now();
    // Several firings fall due while the first run goes on.
    await until(() => Date.now() - started > 50, 'ten intervals', 10_000);
    const during = schedule.status().runs;
    release();

    await until(() => schedule!.status().runs >= 3, 'three runs', 10_000);

    const { recent } = schedule.status();
    expect([during, most]).toEqual([0, 1]);
    for (let i = 1; i < recent.length; i++) expect(recent[i].startedAt).toBeGreaterThanOrEqual(recent[i - 1].endedAt);
  });

  it('counts and reports a failed run, and goes on', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    // The third run waits until the first two are read: on a loaded machine, runs every 10 ms had
    // pushed the failed one out of `recent` before the test looked.
    let readFirstTwo!: () => void;
    const firstTwoRead = new Promise<void>((resolve) => (readFirstTwo = resolve));
    schedule = startSchedule({
      ...base,
      intervalMs: 10,
      onError: (error) => errors.push(error),
      invoke: async () => {
        if (++calls === 1) throw new Error('table not found');
        if (calls > 2) await firstTwoRead;
        return 'ok';
      },
    });

    await until(() => schedule!.status().runs >= 2, 'two runs', 10_000);

    const status = schedule.status();
    readFirstTwo();
    expect(status.failures).toBe(1);
    expect(status.recent.slice(0, 2).map((r) => r.error ?? r.result)).toEqual(['table not found', 'ok']);
    expect(errors).toEqual([new Error('table not found')]);
  });

  it('never invokes a function it may not, and counts each firing as refused', async () => {
    let calls = 0;
    schedule = startSchedule({ ...base, intervalMs: 10, invoke: async () => void (calls += 1), refusal: 'EventBridge may not invoke rollout-sweep' });

    await until(() => schedule!.status().refused >= 2, 'two refused firings', 10_000);

    expect(calls).toBe(0);
    expect(schedule.status()).toMatchObject({ runs: 0, refusal: 'EventBridge may not invoke rollout-sweep' });
  });

  it('stops firing, and its stop waits for the run in progress', async () => {
    let release!: () => void;
    let started = false;
    let ended = false;
    schedule = startSchedule({
      ...base,
      intervalMs: 10,
      invoke: () => {
        started = true;
        return new Promise<void>((resolve) => (release = resolve)).then(() => void (ended = true));
      },
    });
    await until(() => started, 'a run started', 10_000);

    const stopping = schedule.stop();
    release();
    await stopping;

    expect(ended).toBe(true);
    expect(schedule.status().runs).toBe(1);
  });
});

describe('scheduledEvent', () => {
  it('stamps the scheduled time to the second, as EventBridge does', () => {
    expect(scheduledEvent(RULE_ARN, 'us-east-1', '000000000000', Date.UTC(2026, 0, 2, 3, 4, 5, 678)).time).toBe('2026-01-02T03:04:05Z');
  });
});
