import type { UsageDay } from '../../../console/src/lib/api';
import { pointsStoredBefore, retentionCut, useOfLimit } from '../../../console/src/lib/guards';

const NOW = Date.parse('2026-03-31T12:00:00Z');
const day = (date: string, points_stored: number): UsageDay => ({
  date,
  points_in: points_stored,
  points_stored,
  points_refused: 0,
  api_requests: 0,
  webhook_deliveries: 0,
  webhook_failures: 0,
});

describe('the console’s guards', () => {
  it('finds a retention cut only when the retention gets shorter, with the days it loses', () => {
    expect(retentionCut(90, 1, NOW)).toEqual({ cutoff: '2026-03-30T12:00:00.000Z', lostDays: 89 });
    expect(retentionCut(null, 30, NOW)).toEqual({ cutoff: '2026-03-01T12:00:00.000Z', lostDays: null });
    expect(retentionCut(30, 90, NOW)).toBeUndefined();
    expect(retentionCut(30, 30, NOW)).toBeUndefined();
    expect(retentionCut(30, null, NOW)).toBeUndefined();
    expect(retentionCut(null, null, NOW)).toBeUndefined();
  });

  it('estimates what a cut hides from the points stored on the days before its cutoff', () => {
    const days = [day('2026-03-28', 5), day('2026-03-29', 7), day('2026-03-30', 11), day('2026-03-31', 13)];

    expect(pointsStoredBefore(days, '2026-03-30T12:00:00.000Z')).toBe(12);
    expect(pointsStoredBefore(days, '2026-03-01T00:00:00.000Z')).toBe(0);
  });

  it('shows a limit with its current use, or alone when it is not counted', () => {
    expect(useOfLimit(42, 100)).toBe('42 of 100');
    expect(useOfLimit(1234, 10_000)).toBe('1,234 of 10,000');
    expect(useOfLimit(undefined, 100)).toBe('100');
  });
});
