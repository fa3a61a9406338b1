/**
 * AWS requests per 1,000 data points, end to end, on the local runtime (real DynamoDB Local,
 * fauxqs, the embedded broker), by stage (the device's door; the data path from the ingest queue
 * to the webhook), service and operation, for three traffic shapes. Saves the figures the cost
 * model reads (bench/results/data-path.json) and prints them beside the saved "before" figures
 * (bench/results/data-path-before.json, measured on the code before packing).
 *
 *   npm run bench:requests              SAVE_AS=before writes the "before" file instead
 *   PACED=1 npm run bench:requests      the same shapes sent on the devices' clocks (PACED_MS),
 *                                       saved apart (data-path-paced.json, compared with
 *                                       data-path-paced-before.json), not read by the cost model
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { sumBy } from '../local/request-counter';
import { startLocalRuntime } from '../local/runtime';
import { awsRequestsPerThousand, measureDataPath, perThousandPoints, stageOf, type DataPathResult, type TrafficShape } from './data-path-scenario';
import { printTable } from './stats';

/** The traffic shapes measured (docs/cost.md: why these). */
export const SHAPES: Record<string, TrafficShape> = {
  'https-100': { door: 'https', devices: 10, pointsPerMessage: 100, messagesPerDevice: 5 },
  'https-10': { door: 'https', devices: 20, pointsPerMessage: 10, messagesPerDevice: 10 },
  'mqtt-1': { door: 'mqtt', devices: 20, pointsPerMessage: 1, messagesPerDevice: 50 },
};

/**
 * Each shape's interval between a device's messages when PACED=1 (TrafficShape.intervalMs): the
 * same messages over about 2.5 s, at a rate the local door answers well within (docs/cost.md).
 */
const PACED_MS: Record<string, number> = { 'https-100': 500, 'https-10': 250, 'mqtt-1': 50 };
const PACED = process.env.PACED === '1';

export interface SavedShape {
  shape: TrafficShape;
  points: number;
  /**
   * AWS requests per 1,000 points; `dataPathEmpty`: the data path's receives that found nothing,
   * which follow the clock and the pollers rather than the points (the cost model bills them as a
   * fixed line), so that two runs compare without them.
   */
  awsRequestsPer1000: { total: number; door: number; dataPath: number; dataPathEmpty?: number };
  /** Per 1,000 points: requests, bytes and billing units by stage, service, operation and resource. */
  rows: Array<{ stage: string; service: string; operation: string; resource: string; requests: number; bytes: number; units: number; empty: number }>;
  webhook: DataPathResult['received'];
}

const RESULTS = 'bench/results';

const main = async () => {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  // The handlers' metrics lines would interleave with the tables on stdout.
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const runtime = await startLocalRuntime({ log: (line) => process.stderr.write(`${line}\n`) });
  const saved: Record<string, SavedShape> = {};
  try {
    for (const [name, closed] of Object.entries(SHAPES)) {
      if (PACED && !PACED_MS[name]) throw new Error(`no PACED_MS for the shape ${name}: say how often its devices send`);
      const shape = PACED ? { ...closed, intervalMs: PACED_MS[name] } : closed;
      process.stderr.write(`measuring ${name}${PACED ? `, a message every ${shape.intervalMs} ms per device` : ''}…\n`);
      const result = await measureDataPath(runtime, shape);
      const scale = 1000 / result.points;
      const rows = sumBy(
        result.rows.map((r) => ({ ...r, caller: stageOf(r) })),
        ['caller', 'service', 'operation', 'resource'],
      ).map((r) => ({
        stage: r.caller,
        service: r.service,
        operation: r.operation,
        resource: r.resource,
        requests: r.requests * scale,
        bytes: r.bytes * scale,
        units: r.units * scale,
        empty: r.empty * scale,
      }));
      saved[name] = {
        shape,
        points: result.points,
        awsRequestsPer1000: {
          total: awsRequestsPerThousand(result),
          door: awsRequestsPerThousand(result, 'door'),
          dataPath: awsRequestsPerThousand(result, 'data path'),
          dataPathEmpty: rows.filter((r) => r.stage === 'data path').reduce((sum, r) => sum + r.empty, 0),
        },
        rows,
        webhook: result.received,
      };
      printTable(
        `${name}: ${result.points} points, ${shape.devices} devices, ${shape.pointsPerMessage} per ${shape.door === 'mqtt' ? 'publish' : 'request'} — per 1,000 points`,
        perThousandPoints(result).map((r) => ({ ...r })),
      );
    }
  } finally {
    await runtime.stop();
  }
  mkdirSync(RESULTS, { recursive: true });
  const file = `${RESULTS}/data-path${PACED ? '-paced' : ''}${process.env.SAVE_AS === 'before' ? '-before' : ''}.json`;
  writeFileSync(file, `${JSON.stringify({ measuredAt: new Date().toISOString(), shapes: saved }, null, 2)}\n`);
  // Paced runs compare with a paced "before" (PACED=1 SAVE_AS=before), closed ones with the closed one.
  const beforeFile = `${RESULTS}/data-path${PACED ? '-paced' : ''}-before.json`;
  const before = existsSync(beforeFile) ? (JSON.parse(readFileSync(beforeFile, 'utf8')) as { shapes: Record<string, SavedShape> }) : undefined;
  const byService = (s: SavedShape | undefined, stage: string) =>
    Object.fromEntries(
      Object.entries(
        (s?.rows ?? [])
          .filter((r) => r.stage === stage)
          .reduce<Record<string, number>>((acc, r) => {
            acc[r.service] = (acc[r.service] ?? 0) + r.requests;
            return acc;
          }, {}),
      ),
    );
  for (const name of Object.keys(saved)) {
    const services = new Set([
      ...Object.keys(byService(saved[name], 'door')),
      ...Object.keys(byService(saved[name], 'data path')),
      ...Object.keys(byService(before?.shapes[name], 'data path')),
      ...Object.keys(byService(before?.shapes[name], 'door')),
    ]);
    printTable(
      `${name}: requests per 1,000 points, before (${beforeFile}) and now`,
      [...services]
        .sort()
        .flatMap((service) =>
          (['door', 'data path'] as const).map((stage) => ({
            stage,
            service,
            before: byService(before?.shapes[name], stage)[service] ?? 0,
            now: byService(saved[name], stage)[service] ?? 0,
          })),
        )
        .filter((r) => r.before || r.now),
    );
    const b = before?.shapes[name]?.awsRequestsPer1000;
    const n = saved[name].awsRequestsPer1000;
    console.log(
      `${name}: AWS requests per 1,000 points — door ${b?.door.toFixed(1) ?? '?'} → ${n.door.toFixed(1)}, data path ${b?.dataPath.toFixed(1) ?? '?'} → ${n.dataPath.toFixed(1)}, total ${b?.total.toFixed(1) ?? '?'} → ${n.total.toFixed(1)}`,
    );
    console.log(`${name}: the data path without its empty receives (${n.dataPathEmpty!.toFixed(1)} now): ${(n.dataPath - n.dataPathEmpty!).toFixed(1)}`);
  }
  console.log(`saved ${file}`);
};

await main();
