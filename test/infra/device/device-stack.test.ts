import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { HandlerFunction } from '../../../lib/constructs/handler-function';
import { FleetstreamStack } from '../../../lib/fleetstream-stack';
import { configFromContext } from '../../../lib/stack-config';
import { ROUTES } from '../../../lambdas/routes';
import { actionsOf, methodsByRoute, statementsOfFunction, targetOf } from '../template-queries';

// These assertions are about wiring, not code: skip esbuild bundling to synthesize in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const environmentOf = (fn: HandlerFunction) => resources[idOf(fn)].Properties.Environment?.Variables ?? {};
const actionsOfFunction = (fn: HandlerFunction) => statementsOfFunction(template, idOf(fn)).flatMap(actionsOf).sort();
/** The logical IDs a statement's resources point at. */
const targetsOf = (statement: { Resource: unknown }) => [statement.Resource].flat(2).map((r: any) => targetOf(r) ?? targetOf(r?.['Fn::Join']?.[1]?.[0]));
const queueId = (name: 'ingest' | 'forward' | 'alarm-notifications') => idOf(stack.queues.queues[name].queue);
const tableId = () => idOf(stack.registry.table);

const deviceAuthorizer = () => stack.authorizerFunctions.get('device')!;
const deviceApi = () => stack.routeHandlers.get('device-api')!;
const identities = () => stack.routeHandlers.get('identities')!;

describe('device side of the stack', () => {
  it('guards every device route with the device authorizer, which reads the Authorization header', () => {
    const deviceRoutes = [...methodsByRoute(template).entries()]
      .filter(([key]) => key.split(' ')[1].startsWith('/device/'))
      // CORS preflights (OPTIONS) answer without an authorizer; they are the console's, not the devices'.
      .filter(([key]) => !key.startsWith('OPTIONS '));
    const authorizer = Object.values(resources).find(
      (r) => r.Type === 'AWS::ApiGateway::Authorizer' && r.Properties.IdentitySource === 'method.request.header.Authorization',
    )!;

    expect(deviceRoutes.map(([key]) => key).sort()).toEqual(
      ROUTES.filter((r) => r.auth === 'device')
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    );
    expect(deviceRoutes.length).toBe(8);
    expect(JSON.stringify(authorizer.Properties.AuthorizerUri)).toContain(idOf(deviceAuthorizer()));
    for (const [, method] of deviceRoutes) {
      expect(method.AuthorizationType).toBe('CUSTOM');
      expect(resources[targetOf(method.AuthorizerId)!]).toBe(authorizer);
    }
  });

  it('lets the device authorizer read single registry items, claim a device’s sampled authentication minute, and send authentication events, nothing more', () => {
    const statements = statementsOfFunction(template, idOf(deviceAuthorizer()));
    const dynamo = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    const sqs = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:')));

    expect(dynamo.flatMap(actionsOf)).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    expect(dynamo.flatMap(targetsOf)).toEqual([tableId()]);
    expect(sqs.flatMap(actionsOf).every((a) => a.startsWith('sqs:SendMessage') || a === 'sqs:GetQueueAttributes' || a === 'sqs:GetQueueUrl')).toBe(true);
    expect(sqs.flatMap(targetsOf)).toEqual([queueId('forward')]);
    expect(environmentOf(deviceAuthorizer()).FORWARD_QUEUE_URL).toEqual({ Ref: queueId('forward') });
  });

  it('lets the device API send to the ingest and forward queues but not consume them', () => {
    const sqs = statementsOfFunction(template, idOf(deviceApi())).filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:')));

    expect(sqs.flatMap(targetsOf).sort()).toEqual([queueId('forward'), queueId('ingest')].sort());
    expect(sqs.flatMap(actionsOf)).not.toContain('sqs:ReceiveMessage');
    expect(sqs.flatMap(actionsOf)).not.toContain('sqs:DeleteMessage');
    expect(environmentOf(deviceApi())).toMatchObject({ INGEST_QUEUE_URL: { Ref: queueId('ingest') }, FORWARD_QUEUE_URL: { Ref: queueId('forward') } });
  });

  it('feeds the ingest Lambda from the ingest queue, with partial batch responses, and lets it forward, tell alarm transitions, read registry items (the devices of MQTT publishes, their workspaces’ limits and alarm rules, one batch read of the closed sessions of a batch’s devices) and write them one at a time or in transactions (their daily points, the usage, threshold alarms)', () => {
    const ingest = stack.consumerFunctions.get('ingest')!;
    const mapping = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && targetOf(r.Properties.FunctionName) === idOf(ingest))!;
    const statements = statementsOfFunction(template, idOf(ingest));
    const sends = statements.filter((s) => actionsOf(s).includes('sqs:SendMessage'));

    expect(mapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [queueId('ingest'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(sends.flatMap(targetsOf).sort()).toEqual([queueId('forward'), queueId('alarm-notifications')].sort());
    expect(statements.filter((s) => targetsOf(s).includes(tableId())).flatMap(actionsOf)).toEqual([
      'dynamodb:GetItem',
      'dynamodb:BatchGetItem',
      'dynamodb:Query',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
      'dynamodb:ConditionCheckItem',
    ]);
    expect(environmentOf(ingest)).toHaveProperty('REGISTRY_TABLE');
  });

  it('tells the identities Lambda the device API’s address, for the credentials it hands out', () => {
    const url = JSON.stringify(environmentOf(identities()).DEVICE_ENDPOINT_URL);

    expect(url).toContain(idOf(stack.api.restApi));
    expect(url).toContain('/v3/device');
    expect(actionsOfFunction(identities()).some((a) => a.startsWith('sqs:'))).toBe(false);
  });
});
