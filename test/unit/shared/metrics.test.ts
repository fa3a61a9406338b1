import { jest } from '@jest/globals';
import { METRICS_NAMESPACE, OPERATOR_METRICS } from '../../../lambdas/metrics';

// On for this file (the tests keep them off elsewhere: test/helpers/quiet-logs.ts), before the
// module makes its Metrics.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
const { countMetric, publishMetrics } = await import('../../../lambdas/shared/metrics');

/** What publishing writes to stdout: the embedded-metric-format lines CloudWatch reads. */
const published = () => {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    publishMetrics();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((chunk) => chunk.split('\n'))
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);
};

describe('operator metrics (Powertools Metrics, embedded metric format)', () => {
  it('writes the counts of an invocation as one EMF line in the Fleetstream namespace, with the service dimension', () => {
    countMetric('PointsReceived', 120);
    countMetric('PointsRefused', 20);
    countMetric('PointsReceived', 5);
    countMetric('WebhookFailures', 0);

    const [line, ...more] = published();

    expect(more).toEqual([]);
    expect(line._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: METRICS_NAMESPACE,
        Dimensions: [['service']],
        Metrics: [
          { Name: 'PointsReceived', Unit: 'Count' },
          { Name: 'PointsRefused', Unit: 'Count' },
        ],
      },
    ]);
    expect(line).toMatchObject({ service: 'fleetstream', PointsReceived: [120, 5], PointsRefused: 20 });
    expect(line).not.toHaveProperty('WebhookFailures');
  });

  it('writes nothing for an invocation that counted nothing', () => {
    expect(published()).toEqual([]);
  });

  it('names each metric once, each drawn in a graph', () => {
    expect(new Set(OPERATOR_METRICS.map((m) => m.name)).size).toBe(OPERATOR_METRICS.length);
  });
});
