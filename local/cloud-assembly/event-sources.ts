import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startDynamoDbStreamPoller } from '../dynamodb-stream-poller';
import { startSqsPoller } from '../sqs-poller';
import { eventFilterOf } from './event-filter';
import { startRecordingProxy } from './iam';
import type { LocalLambda } from './lambda-host';
import { ACCOUNT, type RunContext } from './run-context';
import type { TableStreams } from './tables-and-queues';
import { functionsIn, resourcesOfType, targetOf, type CfnResource, type Physical } from './template';

/**
 * Starts every enabled AWS::Lambda::EventSourceMapping, its poller's calls made with the function's
 * own role through a proxy of that role. Resolves with the number of mappings the template declares.
 * @throws Error for a mapping that names no function, or whose kind of source or setting does not run here
 */
export const startEventSourceMappings = async (run: RunContext, streams: TableStreams): Promise<number> => {
  const { options, log, stops, calls, template, region, engines, physical, resolve, lambdas, roles } = run;
  const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping');
  for (const [id, mapping] of mappings) {
    const props = mapping.Properties!;
    if (props.Enabled === false) continue;
    const [fnId] = functionsIn(template, props.FunctionName);
    const lambda = lambdas.get(fnId);
    if (!lambda) throw new Error(`Event source mapping ${id} names no function of the template.`);
    const sourceId = targetOf(props.EventSourceArn);
    const source = sourceId ? template.Resources[sourceId] : undefined;
    const start = source ? EVENT_SOURCES[source.Type] : undefined;
    if (!start) throw new Error(`Event source mapping ${id}: ${source ? source.Type : JSON.stringify(props.EventSourceArn)} sources do not run here yet.`);
    log(`mapping ${sourceId} → ${fnId}…`);
    // Lambda polls with the function's own role: the poller's calls go through a proxy of that role.
    const pollerProxy = await startRecordingProxy({
      functionName: fnId,
      roleName: targetOf(template.Resources[fnId].Properties?.Role) ?? 'none',
      statements: () => roles[fnId],
      upstreams: { sqs: engines.sqs.address, dynamodbstreams: engines.dynamo.endpoint },
      arnContext: { region, account: ACCOUNT },
      record: (c) => calls.push(c),
    });
    stops.push(pollerProxy.stop);
    stops.push(
      await start({
        id,
        mapping: props,
        resolve,
        source: source!,
        physical: physical.get(sourceId!)!,
        lambda,
        functionArn: physical.get(fnId)!.attributes.Arn,
        endpoints: pollerProxy.endpoints,
        streams,
        queueUrlOf: (arn) => [...physical.values()].find((p) => p.attributes.Arn === arn && p.attributes.QueueUrl)?.attributes.QueueUrl,
        concurrency: options.consumerConcurrency ?? 2,
        log,
        onStreamError: options.onStreamError,
      }),
    );
  }
  return mappings.length;
};

/** What starts an event source mapping of one kind of source. */
interface EventSourceStart {
  /** The mapping's logical ID, for messages. */
  id: string;
  mapping: Record<string, any>;
  resolve: (value: unknown) => any;
  source: CfnResource;
  physical: Physical;
  lambda: LocalLambda;
  functionArn: string;
  /** The consumer role's proxy of each service: Lambda reads the source and sends to destinations with that role. */
  endpoints: Record<string, string>;
  /** The tables' streams by their ARN here: the engine's ARN, and whether the table was kept from an earlier run. */
  streams: ReadonlyMap<string, { engineArn: string; kept: boolean }>;
  /** The URL of a queue of the template, by its ARN. */
  queueUrlOf: (arn: string) => string | undefined;
  concurrency: number;
  log: (message: string) => void;
  onStreamError?: (error: unknown, what: string) => void;
}

/** A setting of a mapping that no poller here honours fails the start rather than being ignored. */
const refuseUnsupported = (id: string, mapping: Record<string, any>, unsupported: Record<string, (value: any) => boolean>) => {
  for (const [key, isDefault] of Object.entries(unsupported)) {
    if (mapping[key] !== undefined && !isDefault(mapping[key]))
      throw new Error(`Event source mapping ${id}: ${key} ${JSON.stringify(mapping[key])} does not run here.`);
  }
};

/**
 * Event source mappings by the type of their source. A new kind is one more entry; an unknown
 * kind fails the start rather than being left out.
 */
const EVENT_SOURCES: Record<string, (start: EventSourceStart) => Promise<() => Promise<void>>> = {
  'AWS::SQS::Queue': async ({ mapping, physical, lambda, endpoints, concurrency }) => {
    const sqsEndpoint = endpoints.sqs;
    const queueUrl = physical.attributes.QueueUrl;
    const client = new SQSClient({ endpoint: sqsEndpoint, useQueueUrlAsEndpoint: false });
    // As CreateEventSourceMapping: the queue is read with the function's role, and its visibility
    // timeout must cover the function's timeout.
    const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['VisibilityTimeout'] }));
    client.destroy();
    const visibility = Number(Attributes?.VisibilityTimeout ?? 30);
    if (visibility < lambda.spec.timeoutSeconds) {
      throw new Error(
        `Queue visibility timeout (${visibility} s) is less than the timeout of ${lambda.spec.name} (${lambda.spec.timeoutSeconds} s): CreateEventSourceMapping refuses this.`,
      );
    }
    const poller = startSqsPoller({
      queueUrl,
      queueArn: physical.attributes.Arn,
      endpoint: sqsEndpoint,
      batchSize: mapping.BatchSize ?? 10,
      maxBatchingWindowMs: (mapping.MaximumBatchingWindowInSeconds ?? 0) * 1000,
      reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      timeoutMs: lambda.spec.timeoutSeconds * 1000,
      functionName: lambda.spec.name,
      handler: async (event) => (await lambda.invoke(event)) as never,
      concurrency,
    });
    return poller.stop;
  },
  // A table's stream (EventSourceArn: Fn::GetAtt [Table, StreamArn]), read by the one DynamoDB
  // stream poller (local/dynamodb-stream-poller.ts) with the mapping's settings.
  'AWS::DynamoDB::Table': async ({ id, mapping, resolve, lambda, functionArn, endpoints, streams, queueUrlOf, log, onStreamError }) => {
    const streamArn = String(resolve(mapping.EventSourceArn));
    const stream = streams.get(streamArn);
    if (!stream) throw new Error(`Event source mapping ${id}: ${streamArn} is not the stream of a table here (is StreamSpecification set?).`);
    refuseUnsupported(id, mapping, {
      TumblingWindowInSeconds: (v) => v === 0,
      MaximumRecordAgeInSeconds: (v) => v === -1,
      StartingPositionTimestamp: () => false,
    });
    const position = mapping.StartingPosition;
    if (position !== 'TRIM_HORIZON' && position !== 'LATEST') throw new Error(`Event source mapping ${id}: StartingPosition ${position} does not run here.`);
    const destination = mapping.DestinationConfig?.OnFailure?.Destination;
    const onFailureQueueUrl = destination === undefined ? undefined : queueUrlOf(String(resolve(destination)));
    if (destination !== undefined && !onFailureQueueUrl)
      throw new Error(`Event source mapping ${id}: the on-failure destination ${String(resolve(destination))} is not a queue of the template.`);
    // The mapping's checkpoints live in this process: on a table kept from an earlier run, the
    // template's TRIM_HORIZON would deliver the retained records' events a second time.
    const startingPosition = stream.kept ? 'LATEST' : position;
    if (stream.kept && position !== 'LATEST') log(`mapping ${id}: the table was kept from an earlier run, so its stream is read from now on (LATEST)`);
    const timeoutMs = lambda.spec.timeoutSeconds * 1000;
    const poller = await startDynamoDbStreamPoller({
      streamArn: stream.engineArn,
      batchSize: mapping.BatchSize ?? 100,
      maxBatchingWindowMs: (mapping.MaximumBatchingWindowInSeconds ?? 0) * 1000,
      parallelizationFactor: mapping.ParallelizationFactor ?? 1,
      // -1 (the default): retried until the record expires from the stream.
      retryAttempts: mapping.MaximumRetryAttempts === undefined || mapping.MaximumRetryAttempts === -1 ? Infinity : mapping.MaximumRetryAttempts,
      bisectBatchOnError: mapping.BisectBatchOnFunctionError === true,
      timeoutMs,
      functionName: lambda.spec.name,
      functionArn,
      handler: async (event) => (await lambda.invoke(event)) as never,
      reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      filter: eventFilterOf(mapping.FilterCriteria) as ((record: unknown) => boolean) | undefined,
      onFailureQueueUrl,
      startingPosition,
      endpoints: { dynamodbStreams: endpoints.dynamodbstreams, sqs: endpoints.sqs },
      onError: onStreamError,
    });
    return poller.stop;
  },
};
