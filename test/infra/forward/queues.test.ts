import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { HandlerFunction } from '../../../lib/constructs/handler-function';
import { Queues } from '../../../lib/constructs/queues';
import { FleetstreamStack } from '../../../lib/fleetstream-stack';
import { configFromContext } from '../../../lib/stack-config';
import { QUEUE_CONSUMERS, QUEUE_PRODUCERS, QUEUE_REPLAYERS, QUEUES, type QueueName } from '../../../lambdas/queues';
import { actionsOf, statementsOfFunction, targetOf } from '../template-queries';

// These assertions are about wiring, not code: skip esbuild bundling to synthesize in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const queueNames = Object.keys(QUEUES) as QueueName[];
const forwarder = () => stack.consumerFunctions.get('forwarder')!;
const sqsStatements = (fn: HandlerFunction) => statementsOfFunction(template, idOf(fn)).filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:')));

describe('queues', () => {
  it.each(queueNames)('builds the %s queue from the shared queue table, with its DLQ and redrive policy', (name) => {
    const { queue, dlq, definition } = stack.queues.queues[name];

    expect(resources[idOf(queue)].Properties).toMatchObject({
      VisibilityTimeout: definition.visibilityTimeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [idOf(dlq), 'Arn'] }, maxReceiveCount: definition.maxReceiveCount },
    });
    expect(resources[idOf(dlq)].Properties.MessageRetentionPeriod).toBe(definition.dlqRetentionDays * 24 * 3600);
  });

  it('encrypts every queue (SSE-SQS), refuses plain HTTP to it, and retains it by default', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    // each queue with its DLQ, and the registry stream's on-failure queue
    expect(Object.keys(queues)).toHaveLength(queueNames.length * 2 + 1);
    for (const [id, queue] of Object.entries(queues)) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      expect(queue.DeletionPolicy).toBe('Retain');
      const policy = Object.values(template.findResources('AWS::SQS::QueuePolicy')).find((p) => p.Properties.Queues.some((q: unknown) => targetOf(q) === id));
      expect(policy?.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
    }
  });

  it('alarms on a message in any DLQ', () => {
    for (const name of queueNames) {
      const { dlq, dlqAlarm } = stack.queues.queues[name];
      expect(resources[idOf(dlqAlarm)].Properties).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Namespace: 'AWS/SQS',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [idOf(dlq), 'QueueName'] } }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('outputs each queue’s and DLQ’s URL (for replay-dlq) and the dashboard', () => {
    const outputs = template.toJSON().Outputs;

    expect(outputs.ForwardQueueUrl.Value).toEqual({ Ref: idOf(stack.queues.queues.forward.queue) });
    expect(outputs.ForwardDlqUrl.Value).toEqual({ Ref: idOf(stack.queues.queues.forward.dlq) });
    expect(outputs.DashboardName.Value).toEqual({ Ref: idOf(stack.queues.dashboard) });
  });
});

describe('consumers', () => {
  it('has one Lambda per row of the consumer table', () => {
    expect([...stack.consumerFunctions.keys()].sort()).toEqual(Object.values(QUEUE_CONSUMERS).sort());
  });

  it.each(Object.entries(QUEUE_CONSUMERS) as Array<[QueueName, string]>)(
    'feeds the %s queue to %s in batches of the table’s size and window, reporting partial failures',
    (name, source) => {
      const { queue, definition } = stack.queues.queues[name];
      const fn = stack.consumerFunctions.get(source)!;

      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: idOf(fn) },
        EventSourceArn: { 'Fn::GetAtt': [idOf(queue), 'Arn'] },
        BatchSize: definition.batchSize,
        MaximumBatchingWindowInSeconds: definition.maxBatchingWindowSeconds,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      expect(resources[idOf(fn)].Properties.Timeout).toBe(definition.consumerTimeoutSeconds);
      expect(definition.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(definition.consumerTimeoutSeconds);
    },
  );

  it('tells the forwarder its queue, its retry backoff and the registry table', () => {
    const { retry } = QUEUES.forward;

    expect(resources[idOf(forwarder())].Properties.Environment.Variables).toMatchObject({
      FORWARD_QUEUE_URL: { Ref: idOf(stack.queues.queues.forward.queue) },
      FORWARD_RETRY_BASE_SECONDS: String(retry!.baseSeconds),
      FORWARD_RETRY_MAX_SECONDS: String(retry!.maxSeconds),
      REGISTRY_TABLE: { Ref: idOf(stack.registry.table) },
    });
  });

  it('lets the forwarder receive, delete and delay messages of its own queue only, and send none', () => {
    const statements = sqsStatements(forwarder());
    const actions = statements.flatMap(actionsOf);

    expect(actions).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']));
    expect(actions).not.toContain('sqs:SendMessage');
    for (const statement of statements) expect(statement.Resource).toEqual({ 'Fn::GetAtt': [idOf(stack.queues.queues.forward.queue), 'Arn'] });
  });

  it('alarms on the forwarder’s errors', () => {
    const alarm = stack.queues.consumerAlarms.get('forward')!;

    expect(resources[idOf(alarm)].Properties).toMatchObject({
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: idOf(forwarder()) } }],
      Threshold: 1,
    });
  });

  it('draws the queues, DLQs and consumers on the dashboard', () => {
    const body = JSON.stringify(resources[idOf(stack.queues.dashboard)].Properties.DashboardBody);

    for (const name of queueNames) expect(body).toContain(`${name} queue`);
    expect(body).toContain('forwarder: invocations and errors');
    expect(body).toContain(idOf(stack.queues.queues.forward.dlq));
  });
});

describe('producers', () => {
  const functions = () => [
    ...stack.routeHandlers.values(),
    ...stack.authorizerFunctions.values(),
    ...stack.consumerFunctions.values(),
    ...stack.streamFunctions.values(),
  ];

  it('lets exactly the producers of the table send to each queue, and tells them its URL', () => {
    for (const fn of functions()) {
      for (const name of queueNames) {
        const { queue, definition } = stack.queues.queues[name];
        const sends = sqsStatements(fn).some((s) => actionsOf(s).includes('sqs:SendMessage') && JSON.stringify(s.Resource).includes(idOf(queue)));
        const sender = QUEUE_PRODUCERS[name].includes(fn.source) || Boolean(QUEUE_REPLAYERS[name]?.includes(fn.source));
        expect({ fn: fn.source, name, sends }).toEqual({ fn: fn.source, name, sends: sender });
        if (sends) expect(resources[idOf(fn)].Properties.Environment.Variables[definition.urlEnv]).toEqual({ Ref: idOf(queue) });
      }
    }
  });

  it('gives the handlers that neither send nor consume no SQS access at all', () => {
    const involved = new Set([...Object.values(QUEUE_PRODUCERS).flat(), ...Object.values(QUEUE_CONSUMERS), ...Object.values(QUEUE_REPLAYERS).flat()]);

    for (const fn of functions().filter((f) => !involved.has(f.source))) expect(sqsStatements(fn)).toEqual([]);
  });
});

describe('the DLQ replay', () => {
  it('lets the integrations routes receive, release and delete in the forward DLQ and send to the forward queue, nothing more, and tells them both URLs', () => {
    const fn = stack.routeHandlers.get('integrations')!;
    const { queue, dlq } = stack.queues.queues.forward;
    const grants = sqsStatements(fn).map((s) => ({ actions: [...actionsOf(s)].sort(), on: targetOf(Array.isArray(s.Resource) ? s.Resource[0] : s.Resource) }));

    expect(grants).toEqual(
      expect.arrayContaining([
        { actions: ['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:ReceiveMessage'], on: idOf(dlq) },
        { actions: ['sqs:SendMessage'], on: idOf(queue) },
      ]),
    );
    expect(grants).toHaveLength(2);
    const variables = resources[idOf(fn)].Properties.Environment.Variables;
    expect(variables.FORWARD_QUEUE_URL).toEqual({ Ref: idOf(queue) });
    expect(variables.FORWARD_DLQ_URL).toEqual({ Ref: idOf(dlq) });
  });
});

describe('the Queues construct', () => {
  it('refuses a consumer whose timeout outlasts the queue’s visibility timeout', () => {
    const scope = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Scope');
    const queues = new Queues(scope, 'Queues', { definitions: { ...QUEUES, forward: { ...QUEUES.forward, visibilityTimeoutSeconds: 20 } } });
    const fn = new HandlerFunction(scope, 'Slow', { source: 'forwarder', timeout: Duration.seconds(30) });

    expect(() => queues.consume('forward', fn)).toThrow(/visibility timeout \(20 s\) is shorter than forwarder's timeout \(30 s\)/);
  });
});

describe('the registry table', () => {
  it('expires the forwarder’s delivery-ledger entries by their ttl attribute', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', { TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true } });
  });
});
