import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { devicePlaces, workspaceSettings } from '../../domain/registry/device-places';
import { forwardAndLog } from '../../domain/webhooks/events';
import { consoleLive } from '../../domain/console-live/live';
import { ingestBatch, type IngestDeps } from '../../domain/data/ingest';
import { detectThresholds, thresholdDetection } from '../../domain/alarms/threshold-ingest';
import { seenRecorder } from '../../domain/data/last-seen';
import { tagSeenRecorder } from '../../domain/data/tag-seen';
import { rulesGatedBy } from '../../domain/alarms/rule-cache';
import { limitsMemory } from '../../domain/limits/limits';
import { deviceQuota, hundredthOf } from '../../domain/limits/device-quota';
import { recordUsage } from '../../domain/limits/usage';
import { registryDb } from '../../shared/clients';
import { devicePlaceCacheSeconds, LIMITS_CACHE_SECONDS, WRITE_CONCURRENCY } from '../../shared/env';
import { publishMetrics } from '../../shared/metrics';
import { registerShutdownExtension } from '../../shared/shutdown';
import { tracer } from '../../shared/tracer';
import { CloudStamper } from '../../shared/timestamps';
import { readClosedSessions } from '../../stores/device-session-store';
import { timeseriesStore } from '../../stores/timeseries';
import { publishToConsoles } from '../../stores/console-channel';

const db = registryDb();
tracer.captureAWSv3Client(db.doc);
// A workspace's retention and the version of its devices' places, read once per bound: the
// staleness bound of a retention change, a device's move and its rename alike.
const settings = workspaceSettings(db, { ttlMs: devicePlaceCacheSeconds() * 1000, max: 10_000 });
const thresholds = thresholdDetection(db, { settings, deviceTtlMs: devicePlaceCacheSeconds() * 1000 });
const deps: IngestDeps = {
  store: timeseriesStore(),
  forward: forwardAndLog(db),
  concurrency: WRITE_CONCURRENCY,
  places: devicePlaces(db, { settings, ttlMs: devicePlaceCacheSeconds() * 1000, max: 100_000 }),
  settings,
  stamper: new CloudStamper(),
  // A publish is one point: a claim takes a hundredth of the device's day, not a write a publish.
  points: deviceQuota(db, 'points', { limits: limitsMemory(db, { ttlMs: LIMITS_CACHE_SECONDS * 1000 }), slice: hundredthOf, max: 100_000 }),
  recordUsage: (tally) => recordUsage(db, tally),
  closedSessions: (deviceIds) => readClosedSessions(db, deviceIds),
  // A device's last_seen_at: at most one write a minute, however many points it sends.
  seen: seenRecorder(db),
  // A silent rule's tag: a device's newest point on it, as last_seen_at (none where no rule names a
  // tag; no read where the workspace never had a rule).
  tagsSeen: tagSeenRecorder(db, { rules: rulesGatedBy(settings) }),
  live: consoleLive(publishToConsoles),
  // Alarm rules of kind threshold: none read for a workspace whose settings say it never had one.
  thresholds: (messages) => detectThresholds(thresholds, messages),
};
// Told of its container's end, to give back the devices' daily points it claimed and did not use.
await registerShutdownExtension();

/**
 * The ingest queue's consumer (an SQS event source with ReportBatchItemFailures): stores the data
 * points of the device API's messages and of the MQTT data rule's publishes, forwards them and the
 * device events, and answers with the messages to retry. Traced (X-Ray), with its operator metrics
 * written as it ends.
 */
export const handler = middy(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  try {
    const failed = await ingestBatch(
      deps,
      event.Records.map(({ messageId, body }) => ({ messageId, body })),
    );
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  } finally {
    publishMetrics();
  }
}).use(captureLambdaHandler(tracer, { captureResponse: false }));
