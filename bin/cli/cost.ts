/**
 * `fleetstream cost --points-per-day N --devices M [--shape https-100|https-10|mqtt-1]
 * [--backend dynamodb|timestream] [--results bench/results/data-path.json] [--memory-mb 512]
 * [--retention-hours 24] [--retention-days D] [--ingest-containers 5] [--json]`
 * (`npm run cost`; the options are bin/commands/cost.ts's)
 *
 * The modelled monthly AWS cost of a fleet's data path, service by service, from the request
 * counts, payload sizes and Lambda durations that `npm run bench:requests` measured on the local
 * runtime and saved (per 1,000 points, for each traffic shape), priced with bin/cli/aws-prices.ts;
 * and beside it, what AWS IoT Core + Timestream used directly (device → IoT rule → Timestream)
 * would cost for the same traffic. See docs/cost.md for what is modelled and what is not.
 */
import { readFileSync } from 'node:fs';
import { hundredthOf } from '../../lambdas/domain/limits/device-quota';
import { LIMIT_DEFAULTS } from '../../lambdas/schemas/limits';
import { recordBytes } from '../../lambdas/stores/timeseries/timestream';
import { MONTH, PRICES } from './aws-prices';

interface Row {
  stage: string;
  service: string;
  operation: string;
  resource: string;
  requests: number;
  bytes: number;
  units: number;
  empty: number;
}

interface Saved {
  measuredAt: string;
  shapes: Record<string, { shape: { door: string; pointsPerMessage: number }; rows: Row[] }>;
}

/** One line of the bill: a service, what is counted, how many a month, and the dollars. */
export interface CostLine {
  service: string;
  what: string;
  quantity: number;
  usd: number;
}

export interface CostInput {
  pointsPerDay: number;
  devices: number;
  shape: string;
  backend: 'dynamodb' | 'timestream';
  memoryMb: number;
  /** Timestream: hours a point stays in the memory store. */
  retentionHours: number;
  /**
   * How long points are kept, in days (a workspace's data_retention_days; on Timestream, the
   * table's magnetic retention, which caps every workspace): storage then stays at that many days
   * of points. Undefined: kept forever, storage adds up month after month.
   */
  retentionDays?: number;
  /** Ingest Lambda containers each keeping their own places (Lambda starts an SQS source with five pollers). */
  ingestContainers: number;
}

// Lambda's SQS event source polls each queue with long polls (20 s) from about five pollers when
// idle: receives that find nothing, billed whatever the traffic.
const IDLE_POLLERS_PER_QUEUE = 5;
const LONG_POLL_SECONDS = 20;
const QUEUES_POLLED = 3; // ingest, forward, mqtt
/** Bytes of a Timestream record of one point (three dimensions, fleet, payload, timestamp_in), for a typical small payload: storage. */
const TIMESTREAM_RECORD_BYTES = 300;
/**
 * What Fleetstream's Timestream store writes for a typical point (bench/data-path-scenario.ts's
 * payload), metered as Timestream meters it: the record without the workspace and measure name,
 * which a call's common attributes carry once.
 */
const OUR_TIMESTREAM_RECORD_BYTES = recordBytes({
  Dimensions: [
    { Name: 'device_id', Value: 'dev-0123456789abcdefghij' },
    { Name: 'tag', Value: 'temperature' },
  ],
  MeasureValues: [
    { Name: 'fleet_id', Value: 'flt-0123456789abcdefghij', Type: 'VARCHAR' },
    { Name: 'payload', Value: '{"value":20.5,"unit":"C"}', Type: 'VARCHAR' },
    { Name: 'timestamp_in', Value: '1767225600000', Type: 'BIGINT' },
    { Name: 'origin', Value: '0123456789abcdef', Type: 'VARCHAR' },
  ],
});
const TIMESTREAM_COMMON_BYTES = Buffer.byteLength('workspace_idwks-0123456789abcdefghijpoint');
/** Timestream's most records a WriteRecords call. */
const TIMESTREAM_BATCH_MAX = 100;
const DYNAMODB_WRITES = new Set(['BatchWriteItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems']);
const DYNAMODB_READS = new Set(['GetItem', 'Query', 'BatchGetItem', 'Scan', 'TransactGetItems']);
const TIMESERIES_TABLE = 'fleetstream-timeseries';

const sum = (rows: Row[], field: keyof Pick<Row, 'requests' | 'bytes' | 'units' | 'empty'>) => rows.reduce((s, r) => s + r[field], 0);
const line = (service: string, what: string, quantity: number, pricePerUnit: number): CostLine => ({ service, what, quantity, usd: quantity * pricePerUnit });

/** The month's bill of Fleetstream's data path for the input, from the measured rows (per 1,000 points). */
export const fleetstreamCost = (rows: Row[], input: CostInput): CostLine[] => {
  const thousands = (input.pointsPerDay * MONTH.days) / 1000;
  const points = input.pointsPerDay * MONTH.days;
  const of = (service: string, operations?: Set<string> | string) =>
    rows.filter((r) => r.service === service && (!operations || (typeof operations === 'string' ? r.operation === operations : operations.has(r.operation))));
  const lines: CostLine[] = [];
  const apiRequests = sum(of('API Gateway'), 'requests') * thousands;
  lines.push(line('API Gateway', 'REST requests (device API)', apiRequests, PRICES.apiGatewayRestPerMillion / 1e6));
  // The HTTPS door is behind the stage's WAF web ACL (lib/constructs/api-firewall.ts): every request
  // inspected, and the web ACL with its one rule a month. The MQTT door does not pass through it.
  if (apiRequests > 0) {
    lines.push(line('WAF', 'requests inspected (device API)', apiRequests, PRICES.wafPerMillionRequests / 1e6));
    lines.push(line('WAF', 'web ACL and its per-IP rule (fixed, months)', 1, PRICES.wafWebAclPerMonth + PRICES.wafRulePerMonth));
  }
  const lambda = of('Lambda');
  lines.push(line('Lambda', 'invocations', sum(lambda, 'requests') * thousands, PRICES.lambdaRequestsPerMillion / 1e6));
  lines.push(
    line(
      'Lambda',
      `GB-seconds (${input.memoryMb} MB, durations measured locally)`,
      (sum(lambda, 'units') / 1000) * (input.memoryMb / 1024) * thousands,
      PRICES.lambdaPerGbSecond,
    ),
  );
  const sqs = of('SQS');
  lines.push(line('SQS', 'requests (64 KB chunks) of the traffic', (sum(sqs, 'units') - sum(sqs, 'empty')) * thousands, PRICES.sqsPerMillionRequests / 1e6));
  lines.push(
    line(
      'SQS',
      'empty long polls of idle pollers (fixed)',
      QUEUES_POLLED * IDLE_POLLERS_PER_QUEUE * (60 / LONG_POLL_SECONDS) * MONTH.minutes,
      PRICES.sqsPerMillionRequests / 1e6,
    ),
  );
  // The MQTT door's reads and claims of device locators follow devices, days and the clock, not
  // the points: a measurement of a few devices over seconds cannot scale them (modelled below).
  const mqtt = isMqtt(rows);
  const ofLocator = (operation: string) => (r: Row) => mqtt && r.stage === 'data path' && r.operation === operation && isLocator(r);
  const dynamoWrites = of('DynamoDB', DYNAMODB_WRITES).filter(
    (r) => (input.backend === 'dynamodb' || r.resource !== TIMESERIES_TABLE) && !ofLocator('UpdateItem')(r),
  );
  lines.push(line('DynamoDB', 'write request units', sum(dynamoWrites, 'units') * thousands, PRICES.dynamoDbPerMillionWrites / 1e6));
  if (mqtt) lines.push(pointClaims(input));
  lines.push(
    line(
      'DynamoDB',
      'read request units (one a read)',
      sum(
        of('DynamoDB', DYNAMODB_READS).filter((r) => !ofLocator('GetItem')(r)),
        'requests',
      ) * thousands,
      PRICES.dynamoDbPerMillionReads / 1e6,
    ),
  );
  if (mqtt) lines.push(deviceLookups(input));
  if (input.backend === 'dynamodb') {
    const stored = of('DynamoDB', 'BatchWriteItem').filter((r) => r.resource === TIMESERIES_TABLE);
    const gbPerDay = (sum(stored, 'bytes') * (input.pointsPerDay / 1000)) / 1e9;
    // Under a retention, TTL deletes (free of write charges) hold the table at that many days of points.
    lines.push(
      input.retentionDays === undefined
        ? line('DynamoDB', 'time series stored this month (GB; adds up month after month)', gbPerDay * MONTH.days, PRICES.dynamoDbStoragePerGbMonth)
        : line(
            'DynamoDB',
            `time series stored (GB; ${input.retentionDays} days kept, TTL deletes free)`,
            gbPerDay * input.retentionDays,
            PRICES.dynamoDbStoragePerGbMonth,
          ),
    );
  } else {
    // The ingest writes each invocation's points in calls of up to 100 records of one workspace.
    const perCall = Math.min(
      TIMESTREAM_BATCH_MAX,
      1000 /
        Math.max(
          sum(
            of('Lambda').filter((r) => r.resource === 'ingest'),
            'requests',
          ),
          10,
        ),
    );
    const writesPerPoint = Math.ceil((perCall * OUR_TIMESTREAM_RECORD_BYTES + TIMESTREAM_COMMON_BYTES) / 1024) / perCall;
    lines.push(
      ...timestreamLines(points, input.pointsPerDay, input.retentionHours, input.retentionDays, {
        writesPerPoint,
        what: `${Math.round(perCall)} records a call, ${OUR_TIMESTREAM_RECORD_BYTES} bytes each`,
      }),
    );
  }
  const iot = of('IoT Core');
  const messages = sum(
    iot.filter((r) => r.operation.startsWith('Publish')),
    'units',
  );
  if (messages) lines.push(line('IoT Core', 'messages (5 KB units)', messages * thousands, PRICES.iotCorePerMillionMessages / 1e6));
  const rules = sum(
    iot.filter((r) => r.operation === 'RuleTriggered'),
    'requests',
  );
  if (rules) {
    lines.push(line('IoT Core', 'rules triggered', rules * thousands, PRICES.iotCorePerMillionRulesTriggered / 1e6));
    lines.push(
      line(
        'IoT Core',
        'actions executed',
        sum(
          iot.filter((r) => r.operation === 'ActionExecuted'),
          'requests',
        ) * thousands,
        PRICES.iotCorePerMillionActionsExecuted / 1e6,
      ),
    );
    lines.push(
      line('IoT Core', 'connection minutes (devices always connected)', input.devices * MONTH.minutes, PRICES.iotCorePerMillionConnectionMinutes / 1e6),
    );
  }
  lines.push(line('Data transfer', 'webhook POSTs out (GB)', (sum(of('Webhook'), 'bytes') * thousands) / 1e9, PRICES.dataTransferOutPerGb));
  return lines;
};

/**
 * The ingest Lambda's device lookups for MQTT publishes, which follow devices and days, not the
 * points: a container keeps a device's place while its workspace's places are unchanged
 * (lambdas/domain/registry/device-places.ts), a day at most, and a day's first claim of the device's points
 * is followed by a check of the place; so each container reads a device's place about once a day
 * (one strongly consistent read, a unit: it must not be older than the workspace's version read
 * before it), or less often when the device publishes less. Moves
 * and renames add a read per moved device and container; the workspace's own read every
 * DEVICE_PLACE_CACHE_SECONDS is measured (a data-path GetItem of the workspace).
 */
const deviceLookups = (input: CostInput): CostLine => {
  const publishesPerDevicePerDay = input.pointsPerDay / input.devices;
  const lookups = input.devices * input.ingestContainers * Math.min(1, publishesPerDevicePerDay / input.ingestContainers) * MONTH.days;
  return line(
    'DynamoDB',
    `read request units: MQTT device lookups (${input.ingestContainers} containers, a day at most)`,
    lookups,
    PRICES.dynamoDbPerMillionReads / 1e6,
  );
};

/**
 * The ingest Lambda's claims of MQTT devices' daily points (lambdas/domain/limits/point-quota.ts), which
 * follow devices and days: each container claims a slice of a device's daily limit (a hundredth of
 * the deployment's default) the first time it sees the device in a UTC day, and again each time
 * it has used its slice. One write unit each (a locator is well under 1 KB). A claim also answers
 * the device's place, which the device's next lookup checks once (`deviceLookups`).
 */
const pointClaims = (input: CostInput): CostLine => {
  const slice = hundredthOf(LIMIT_DEFAULTS.points_per_device_per_day);
  const perContainerPerDay = Math.max(1, Math.ceil(input.pointsPerDay / input.devices / input.ingestContainers / slice));
  const claims = input.devices * input.ingestContainers * perContainerPerDay * MONTH.days;
  return line(
    'DynamoDB',
    `write request units: MQTT devices' daily-point claims (${input.ingestContainers} containers, slices of ${slice.toLocaleString('en-US')})`,
    claims,
    PRICES.dynamoDbPerMillionWrites / 1e6,
  );
};

const REGISTRY_TABLE = 'fleetstream-registry';
/** A request of a device's locator (local/request-counter.ts names a single item's kind after its table). */
const isLocator = (r: Row) => r.resource === `${REGISTRY_TABLE}/DEVICE`;
const isMqtt = (rows: Row[]) => rows.some((r) => r.service === 'IoT Core');

/**
 * Timestream for LiveAnalytics: writes metered in KiB per call (a call of one record of up to 1 KB
 * is one write), the memory store for the retention, the magnetic store after it.
 */
const timestreamLines = (
  points: number,
  pointsPerDay: number,
  retentionHours: number,
  retentionDays: number | undefined,
  writes = { writesPerPoint: Math.ceil(TIMESTREAM_RECORD_BYTES / 1024), what: '1 KB records, one a call' },
): CostLine[] => {
  const gbPerPoint = TIMESTREAM_RECORD_BYTES / 1e9;
  // The magnetic store keeps what the table's magnetic retention keeps after the memory store's hours.
  const magneticDays = retentionDays === undefined ? undefined : Math.max(0, retentionDays - retentionHours / 24);
  return [
    line('Timestream', `writes (${writes.what})`, points * writes.writesPerPoint, PRICES.timestreamPerMillionWrites / 1e6),
    line(
      'Timestream',
      `memory store (GB-hours, ${retentionHours} h kept)`,
      (pointsPerDay / 24) * retentionHours * gbPerPoint * MONTH.hours,
      PRICES.timestreamMemoryStorePerGbHour,
    ),
    magneticDays === undefined
      ? line('Timestream', 'magnetic store added this month (GB; adds up)', points * gbPerPoint, PRICES.timestreamMagneticStorePerGbMonth)
      : line(
          'Timestream',
          `magnetic store (GB; the table keeps ${retentionDays} days)`,
          pointsPerDay * magneticDays * gbPerPoint,
          PRICES.timestreamMagneticStorePerGbMonth,
        ),
  ];
};

/** The same traffic on AWS IoT Core + Timestream used directly: device → MQTT publish per point → IoT rule → Timestream action. */
export const directIotTimestreamCost = (input: CostInput): CostLine[] => {
  const points = input.pointsPerDay * MONTH.days;
  return [
    line('IoT Core', 'messages (one publish a point)', points, PRICES.iotCorePerMillionMessages / 1e6),
    line('IoT Core', 'rules triggered', points, PRICES.iotCorePerMillionRulesTriggered / 1e6),
    line('IoT Core', 'Timestream actions executed', points, PRICES.iotCorePerMillionActionsExecuted / 1e6),
    line('IoT Core', 'connection minutes (devices always connected)', input.devices * MONTH.minutes, PRICES.iotCorePerMillionConnectionMinutes / 1e6),
    ...timestreamLines(points, input.pointsPerDay, input.retentionHours, input.retentionDays),
  ];
};

const total = (lines: CostLine[]) => lines.reduce((s, l) => s + l.usd, 0);

const print = (title: string, lines: CostLine[]) => {
  console.log(`\n${title}`);
  const w = Math.max(...lines.map((l) => `${l.service}: ${l.what}`.length));
  for (const l of lines) {
    const q = l.quantity >= 100 ? Math.round(l.quantity).toLocaleString('en-US') : l.quantity.toPrecision(3);
    console.log(`  ${`${l.service}: ${l.what}`.padEnd(w)}  ${q.padStart(16)}  $${l.usd.toFixed(2).padStart(10)}`);
  }
  console.log(`  ${'total per month'.padEnd(w)}  ${''.padStart(16)}  $${total(lines).toFixed(2).padStart(10)}`);
};

/** `cost`'s options: the traffic and its model (CostInput), where the measurement is, JSON or text. */
export interface CostOptions extends CostInput {
  results: string;
  json?: boolean;
}

/**
 * Prints the month's bill of Fleetstream's data path beside the direct IoT Core + Timestream one
 * (text, or JSON with `json`); a measurement file that cannot be read, or has no such shape, exits 2.
 */
export const printCost = (options: CostOptions) => {
  const { results, json, pointsPerDay, devices, shape, backend, memoryMb, retentionHours, retentionDays, ingestContainers } = options;
  const input: CostInput = { pointsPerDay, devices, shape, backend, memoryMb, retentionHours, retentionDays, ingestContainers };
  let saved: Saved;
  try {
    saved = JSON.parse(readFileSync(results, 'utf8')) as Saved;
  } catch (error) {
    console.error(`cost: ${results}: ${(error as Error).message}; run npm run bench:requests`);
    process.exit(2);
  }
  const measured = saved.shapes[shape];
  if (!measured) {
    console.error(`cost: no measurement of shape ${shape} in ${results} (shapes: ${Object.keys(saved.shapes).join(', ')}); run npm run bench:requests`);
    process.exit(2);
  }
  const ours = fleetstreamCost(measured.rows, input);
  const direct = directIotTimestreamCost(input);
  if (json) {
    console.log(
      JSON.stringify(
        {
          input,
          prices: { region: PRICES.region, asOf: PRICES.asOf },
          fleetstream: { lines: ours, total: total(ours) },
          direct: { lines: direct, total: total(direct) },
          ratio: total(ours) / total(direct),
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(
    `${pointsPerDay.toLocaleString('en-US')} points a day from ${devices.toLocaleString('en-US')} devices (${(pointsPerDay * MONTH.days).toLocaleString('en-US')} a month); list prices of ${PRICES.region}, ${PRICES.asOf}`,
  );
  console.log(
    `measured: ${results} (${saved.measuredAt}), shape ${shape} (${measured.shape.pointsPerMessage} point(s) per ${measured.shape.door === 'mqtt' ? 'MQTT publish' : 'HTTPS request'}), time series in ${backend}, ${retentionDays === undefined ? 'kept forever' : `kept ${retentionDays} days`}`,
  );
  print(`Fleetstream (webhook forwarding of every point and its data event included)`, ours);
  print('AWS IoT Core + Timestream used directly (device → IoT rule → Timestream; no webhooks, no registry)', direct);
  console.log(`\nratio Fleetstream / direct = ${(total(ours) / total(direct)).toFixed(3)}`);
};
