import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METRICS_NAMESPACE, METRICS_SERVICE, OPERATOR_METRICS, STAGE_THROTTLED_METRIC } from '../../lambdas/metrics';
import { REFUSAL_CONTEXT_KEY, ROUTE_HANDLERS, ROUTES } from '../../lambdas/routes';
import { SCHEDULES } from '../../lambdas/schedules';
import { API_STAGE, GATEWAY_ERRORS } from '../../lib/constructs/api';
import type { HandlerFunction } from '../../lib/constructs/handler-function';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, mentions, methodsByRoute, statementsOfFunction, targetOf } from './template-queries';

// The template without the bundles, which test/cloud/bundles.test.ts checks in the run's cloud
// assembly as `cdk synth` writes them. The limit is a ceiling for a loaded 2-core machine.
const SYNTH_LIMIT_MS = 120_000;
let stack: FleetstreamStack;
let template: Template;
let assembly: CloudAssembly;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const tableId = () => idOf(stack.registry.table);
const functionId = (fn: HandlerFunction) => idOf(fn);
const apiKeyAuthorizer = () => stack.authorizerFunctions.get('api-key')!;
const distributionId = () => idOf(stack.consoleSite.distribution);
/** The app's Lambdas: all but CDK's BucketDeployment (Python), which only runs during a deploy. */
const appFunctions = () => {
  const deployOnly = new Set(Object.values(template.findResources('Custom::CDKBucketDeployment')).map((r) => targetOf(r.Properties.ServiceToken)));
  return Object.fromEntries(Object.entries(template.findResources('AWS::Lambda::Function')).filter(([id]) => !deployOnly.has(id)));
};

beforeAll(() => {
  // The one synthesis of the infra project that CloudFormation Validate checks (test/helpers/infra-synth.ts).
  delete process.env.CDK_VALIDATION;
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
  assembly = app.synth();
  template = Template.fromStack(stack);
}, SYNTH_LIMIT_MS);

describe('the template', () => {
  it('holds at most CloudFormation’s 500 resources a stack: a deploy past it fails', () => {
    // 494 with alarms: API Gateway's methods and resources are about half. The next feature that
    // adds routes moves them into a nested stack first (docs/deployment.md, "Resources").
    expect(Object.keys(template.toJSON().Resources).length).toBeLessThanOrEqual(500);
  });
});

describe('routes', () => {
  it('has exactly one method per route table row, on its path, and no other but CORS preflights', () => {
    const methods = methodsByRoute(template);
    expect([...methods.keys()].filter((key) => !key.startsWith('OPTIONS ')).sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('answers CORS preflights on every route’s path itself, for the console’s origin only, with no authorizer', () => {
    const methods = methodsByRoute(template);
    for (const path of new Set(ROUTES.map((r) => r.path))) {
      const preflight = methods.get(`OPTIONS ${path}`);
      expect(preflight).toMatchObject({ AuthorizationType: 'NONE', Integration: { Type: 'MOCK' } });
      const headers = preflight!.Integration.IntegrationResponses[0].ResponseParameters;
      expect(mentions(headers['method.response.header.Access-Control-Allow-Origin'], distributionId())).toBe(true);
      expect(headers['method.response.header.Access-Control-Allow-Headers']).toBe("'Content-Type,Authorization,X-API-KEY'");
    }
  });

  it('tells every route handler the console’s origin, so that its answers carry the same CORS header', () => {
    for (const fn of stack.routeHandlers.values()) {
      const variables = template.toJSON().Resources[functionId(fn)].Properties.Environment.Variables;
      expect(mentions(variables.CORS_ALLOWED_ORIGIN, distributionId())).toBe(true);
    }
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))('%s has its authorization and handler', (key, route) => {
    const method = methodsByRoute(template).get(key)!;
    if (route.auth === 'none') {
      expect(method.AuthorizationType).toBe('NONE');
      expect(method.AuthorizerId).toBeUndefined();
    } else {
      expect(method.AuthorizationType).toBe('CUSTOM');
      const authorizer = template.toJSON().Resources[targetOf(method.AuthorizerId)!];
      expect(mentions(authorizer.Properties.AuthorizerUri, functionId(stack.authorizerFunctions.get(route.auth)!))).toBe(true);
    }
    expect(method.Integration.Type).toBe('AWS_PROXY');
    expect(mentions(method.Integration.Uri, functionId(stack.routeHandlers.get(route.handler)!))).toBe(true);
    expect(method.Integration.ResponseTransferMode ?? 'BUFFERED').toBe(route.stream ? 'STREAM' : 'BUFFERED');
  });

  it('streams every list route, through Lambda’s response-streaming invocation: a list can outgrow a buffered answer’s 6 MB', () => {
    const lists = ROUTES.filter((r) => r.method === 'GET' && r.operationId.startsWith('list'));
    const methods = methodsByRoute(template);

    expect(lists.map((r) => r.operationId).sort()).toEqual([
      'listAlarmRules',
      'listAlarms',
      'listApiKeys',
      'listConditions',
      'listDeviceEvents',
      'listDevices',
      'listExports',
      'listFirmwares',
      'listFleets',
      'listGroupDevices',
      'listGroups',
      'listIdentities',
      'listIntegrationDeliveries',
      'listIntegrations',
      'listJobs',
      'listRolloutDevices',
      'listRollouts',
      'listWorkspaces',
    ]);
    for (const route of lists) {
      const method = methods.get(`${route.method} ${route.path}`)!;
      expect([route.operationId, method.Integration.ResponseTransferMode]).toEqual([route.operationId, 'STREAM']);
      expect(JSON.stringify(method.Integration.Uri)).toContain('/response-streaming-invocations');
    }
  });

  it('gives every method of one Lambda the same transfer mode: a streaming Lambda answers in a format a buffered integration cannot read', () => {
    const modes = new Map<string, Set<string>>();
    for (const route of ROUTES) {
      const method = methodsByRoute(template).get(`${route.method} ${route.path}`)!;
      const fn = functionId(stack.routeHandlers.get(route.handler)!);
      modes.set(fn, (modes.get(fn) ?? new Set()).add(method.Integration.ResponseTransferMode ?? 'BUFFERED'));
    }

    expect([...modes.values()].filter((set) => set.size > 1)).toEqual([]);
    expect([...modes.values()].filter((set) => set.has('STREAM'))).toHaveLength(13);
  });

  it('has one REQUEST authorizer per kind of route auth in use; the API one has no identity source and API Gateway’s cache off, and caches itself for the configured time', () => {
    const usedAuths = new Set(ROUTES.map((r) => r.auth).filter((a) => a !== 'none'));
    template.resourceCountIs('AWS::ApiGateway::Authorizer', usedAuths.size);
    expect([...stack.authorizerFunctions.keys()].sort()).toEqual([...usedAuths].sort());
    // A cached REQUEST authorizer answers 401 itself when any identity source is missing; a caller
    // sends X-API-KEY or a session's Authorization, never both, so no identity source may be required.
    const apiAuthorizer = Object.values(template.findResources('AWS::ApiGateway::Authorizer')).find((a) =>
      mentions(a.Properties.AuthorizerUri, functionId(stack.authorizerFunctions.get('api-key')!)),
    )!;
    expect(apiAuthorizer.Properties).toMatchObject({ Type: 'REQUEST', IdentitySource: '', AuthorizerResultTtlInSeconds: 0 });
    const fn = template.toJSON().Resources[functionId(stack.authorizerFunctions.get('api-key')!)];
    expect(fn.Properties.Environment.Variables.AUTHORIZER_CACHE_TTL_SECONDS).toBe('30');
  });
});

describe('handlers', () => {
  it('has one Lambda per handler of the route table plus one per authorizer, per queue consumer, per stream consumer and per schedule, the MQTT and console authorizers and the IoT endpoints reader', () => {
    expect([...stack.routeHandlers.keys()].sort()).toEqual([...ROUTE_HANDLERS].sort());
    expect([...stack.scheduledFunctions.keys()]).toEqual(SCHEDULES.map((s) => s.handler));
    expect(Object.keys(appFunctions())).toHaveLength(
      ROUTE_HANDLERS.length + stack.authorizerFunctions.size + stack.consumerFunctions.size + stack.streamFunctions.size + stack.scheduledFunctions.size + 4, // + the MQTT and console authorizers, the IoT endpoints reader, the user pool trigger
    );
  });

  it('runs every Lambda on nodejs22.x, arm64, as an ES module with source maps and its own log group', () => {
    for (const { Properties } of Object.values(appFunctions())) {
      expect(Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        Environment: { Variables: { NODE_OPTIONS: '--enable-source-maps' } },
      });
      expect(targetOf(Properties.LoggingConfig.LogGroup)).toMatch(/Logs/);
    }
    template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('tells every handler but openapi where the registry table is', () => {
    for (const fn of [...stack.routeHandlers.values(), ...stack.authorizerFunctions.values()]) {
      const variables = template.toJSON().Resources[functionId(fn)].Properties.Environment.Variables;
      if (fn.source === 'openapi') expect(variables.REGISTRY_TABLE).toBeUndefined();
      else expect(variables.REGISTRY_TABLE).toEqual({ Ref: tableId() });
    }
  });
});

describe('least privilege', () => {
  const dynamoStatements = (fn: HandlerFunction) =>
    statementsOfFunction(template, functionId(fn)).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));

  it('lets the API-key authorizer only GetItem on the registry table', () => {
    expect(dynamoStatements(apiKeyAuthorizer())).toEqual([{ Action: 'dynamodb:GetItem', Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] }]);
  });

  it('gives the openapi handler no table access', () => {
    expect(dynamoStatements(stack.routeHandlers.get('openapi')!)).toEqual([]);
  });

  it('lets the storage API only read items by key, count its requests, write and delete an export, and query the table (its workspace and fleet checks, the key’s rate and the usage, exports; the cloud-assembly run saw nothing else): no Scan, no index', () => {
    const statements = dynamoStatements(stack.routeHandlers.get('timeseries')!).filter(
      (s) => !JSON.stringify(s.Resource).includes(idOf(stack.timeseries.table!)),
    );

    expect(statements).toEqual([
      {
        Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
        Effect: 'Allow',
        Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }],
      },
    ]);
  });

  it('lets the retention consumer only GetItem and UpdateItem on the registry table (its workspace, and what it owes)', () => {
    const statements = dynamoStatements(stack.consumerFunctions.get('retention')!).filter(
      (s) => !JSON.stringify(s.Resource).includes(idOf(stack.timeseries.table!)),
    );

    expect(statements).toEqual([{ Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] }]);
  });

  it('lets the export consumer only GetItem, BatchGetItem (the names of an export with names) and UpdateItem on the registry table', () => {
    const statements = dynamoStatements(stack.consumerFunctions.get('export')!).filter(
      (s) => !JSON.stringify(s.Resource).includes(idOf(stack.timeseries.table!)),
    );

    expect(statements).toEqual([
      { Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'], Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] },
    ]);
  });

  it('lets the ingest Lambda read the registry and write one item at a time or in transactions (threshold alarms): no BatchWriteItem, no index', () => {
    const statements = dynamoStatements(stack.consumerFunctions.get('ingest')!).filter(
      (s) => !JSON.stringify(s.Resource).includes(idOf(stack.timeseries.table!)),
    );

    expect(statements).toEqual([
      {
        Action: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        Effect: 'Allow',
        Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }],
      },
    ]);
  });

  it('lets the limits and usage routes only GetItem, Query and UpdateItem on the registry table', () => {
    expect(dynamoStatements(stack.routeHandlers.get('limits')!)).toEqual([
      { Action: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'], Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] },
    ]);
  });

  it('lets the groups’ routes read and write one item at a time or in transactions: no BatchWriteItem, no Scan, no index', () => {
    expect(dynamoStatements(stack.routeHandlers.get('groups')!)).toEqual([
      {
        Action: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        Effect: 'Allow',
        Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }],
      },
    ]);
  });

  it('lets the device state’s routes read and update items by key only: no query, put, delete or batch', () => {
    expect(dynamoStatements(stack.routeHandlers.get('state')!)).toEqual([
      { Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] },
    ]);
  });

  it('gives every API handler, the ingest Lambda and the MQTT door’s consumer the workspaces’ default limits, and no other function', () => {
    const resources = template.toJSON().Resources;
    const variableOf = (fn: HandlerFunction) => resources[functionId(fn)].Properties.Environment?.Variables?.WORKSPACE_LIMIT_DEFAULTS;
    for (const [name, fn] of stack.routeHandlers)
      expect([name, variableOf(fn)]).toEqual([name, name === 'openapi' ? undefined : JSON.stringify(stack.config.limitDefaults)]);
    expect(variableOf(stack.consumerFunctions.get('ingest')!)).toEqual(JSON.stringify(stack.config.limitDefaults));
    expect(variableOf(stack.consumerFunctions.get('device-mqtt')!)).toEqual(JSON.stringify(stack.config.limitDefaults));
    for (const fn of [...stack.authorizerFunctions.values(), stack.consumerFunctions.get('forwarder')!, ...stack.streamFunctions.values()])
      expect(variableOf(fn)).toBeUndefined();
  });

  it('lets the other handlers read and write items of the registry table only, without Scan or table management', () => {
    for (const [name, fn] of stack.routeHandlers) {
      // The state's routes only read and update (their own test above).
      if (name === 'openapi' || name === 'timeseries' || name === 'limits' || name === 'state') continue;
      // Grants on the time-series table are checked in test/infra/timeseries.
      const statements = dynamoStatements(fn).filter((s) => !JSON.stringify(s.Resource).includes(idOf(stack.timeseries.table!)));
      expect(statements.length).toBeGreaterThan(0);
      // The firmware handler also queries the firmware-use index (checked in test/infra/firmware.test.ts),
      // the rollouts' handler a rollout's devices on an index (test/infra/rollout-sweep.test.ts).
      for (const statement of statements.filter((s) => !JSON.stringify(s.Resource).includes('/index/'))) {
        expect(statement.Resource).toEqual([{ 'Fn::GetAtt': [tableId(), 'Arn'] }]);
        expect(actionsOf(statement)).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:ConditionCheckItem']));
        expect(actionsOf(statement)).not.toEqual(expect.arrayContaining(['dynamodb:Scan']));
        expect(actionsOf(statement).every((a) => !a.includes('*') && !/Table$/.test(a))).toBe(true);
      }
    }
  });

  it('lets each Lambda write logs only to its own log group, with no AWS managed policy', () => {
    const resources = template.toJSON().Resources;
    for (const fn of [
      ...stack.routeHandlers.values(),
      ...stack.authorizerFunctions.values(),
      ...stack.consumerFunctions.values(),
      ...stack.streamFunctions.values(),
      ...stack.scheduledFunctions.values(),
    ]) {
      const props = resources[functionId(fn)].Properties;
      const logGroupId = targetOf(props.LoggingConfig.LogGroup)!;
      const logStatements = statementsOfFunction(template, functionId(fn)).filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
      expect(logStatements).toEqual([
        { Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Effect: 'Allow', Resource: { 'Fn::GetAtt': [logGroupId, 'Arn'] } },
      ]);
      expect(resources[targetOf(props.Role)!].Properties.ManagedPolicyArns).toBeUndefined();
    }
  });
});

describe('registry table', () => {
  it('is on-demand with pk/sk strings, point-in-time recovery and server-side encryption', () => {
    // The registry, and the time-series store of the default backend.
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('is retained, and protected from deletion, by default', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
  });
});

describe('stage', () => {
  it(`is named ${API_STAGE}, throttled, with access logs and error-level execution logs`, () => {
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'v3',
      AccessLogSetting: { DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('AccessLogs'), 'Arn'] }, Format: Match.stringLikeRegexp('requestId') },
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: 500,
          ThrottlingBurstLimit: 1000,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
        }),
      ]),
    });
  });

  it('throttles every method of the device door apart from the management API, with the default device throttle', () => {
    const [stage] = Object.values(template.findResources('AWS::ApiGateway::Stage'));
    const own = (stage.Properties.MethodSettings as Array<Record<string, unknown>>).filter((m) => m.ResourcePath !== '/*');
    const deviceRoutes = ROUTES.filter((r) => r.path.startsWith('/device/'));

    expect(deviceRoutes.length).toBeGreaterThan(0);
    // `/~1device~1data` is /device/data: a leading slash, then the path with `/` written `~1`.
    expect(own.map((m) => `${m.HttpMethod} ${String(m.ResourcePath).slice(1).replaceAll('~1', '/')}`).sort()).toEqual(
      deviceRoutes.map((r) => `${r.method} ${r.path}`).sort(),
    );
    for (const setting of own)
      expect(setting).toMatchObject({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000, LoggingLevel: 'ERROR', DataTraceEnabled: false });
  });

  it('has a WAF web ACL with a per-IP rate of 6,000 requests a minute, associated with the stage', () => {
    const [[aclId, acl]] = Object.entries(template.findResources('AWS::WAFv2::WebACL'));
    const [stageId] = Object.keys(template.findResources('AWS::ApiGateway::Stage'));

    expect(acl.Properties.Rules.map((r: { Statement: unknown; Action: unknown }) => [r.Action, r.Statement])).toEqual([
      [{ Block: {} }, { RateBasedStatement: { AggregateKeyType: 'IP', Limit: 6000, EvaluationWindowSec: 60 } }],
    ]);
    template.hasResourceProperties('AWS::WAFv2::WebACLAssociation', { WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] } });
    const [association] = Object.values(template.findResources('AWS::WAFv2::WebACLAssociation'));
    expect(mentions(association.Properties.ResourceArn, stageId)).toBe(true);
  });

  it('is a regional endpoint, since an edge-optimized one cuts idle streams after 30 s', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
  });

  it.each(GATEWAY_ERRORS.map((e) => [e.type.responseType, e] as const))('answers %s in the JSON error envelope', (type, error) => {
    const responses = Object.values(template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: type } }));
    expect(responses).toHaveLength(1);
    const { StatusCode, ResponseParameters, ResponseTemplates } = responses[0].Properties;
    expect(StatusCode).toBe(error.status?.toString());
    // The console's origin may read it (a 401 or 429 the console must show), and only that origin.
    expect(ResponseParameters).toEqual({
      'gatewayresponse.header.Content-Type': "'application/json'",
      ...Object.fromEntries(Object.entries(error.headers ?? {}).map(([name, value]) => [`gatewayresponse.header.${name}`, `'${value}'`])),
      'gatewayresponse.header.Access-Control-Allow-Origin': expect.anything(),
      'gatewayresponse.header.Vary': "'Origin'",
    });
    expect(mentions(ResponseParameters['gatewayresponse.header.Access-Control-Allow-Origin'], distributionId())).toBe(true);
    // API Gateway renders messageString as a quoted JSON string.
    const rendered = ResponseTemplates['application/json'].replace('$context.error.messageString', '"Bad thing"');
    expect(JSON.parse(rendered)).toEqual({
      error: { code: error.code, message: expect.any(String), details: expect.any(Array) },
      request_id: '$context.requestId',
    });
  });

  it('answers the stage’s throttling 429 rate_limited with Retry-After, as the handlers answer a key’s rate', () => {
    const [throttled] = Object.values(template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: 'THROTTLED' } }));

    expect(throttled.Properties.StatusCode).toBe('429');
    expect(throttled.Properties.ResponseParameters['gatewayresponse.header.Retry-After']).toBe("'1'");
    expect(JSON.parse(throttled.Properties.ResponseTemplates['application/json']).error.code).toBe('rate_limited');
  });

  it('answers an authorizer’s Deny (a device token signed but refused) 401, with the authorizer’s reason in details', () => {
    const [denied] = Object.values(template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: 'ACCESS_DENIED' } }));
    const body = JSON.parse(denied.Properties.ResponseTemplates['application/json']);

    expect(denied.Properties.StatusCode).toBe('401');
    expect(body.error).toEqual({
      code: 'unauthorized',
      message: expect.any(String),
      details: [{ field: 'header.authorization', message: `$context.authorizer.${REFUSAL_CONTEXT_KEY}` }],
    });
  });

  it('answers an unknown route 404 not_found', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'MISSING_AUTHENTICATION_TOKEN',
      StatusCode: '404',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"not_found"') },
    });
  });
});

describe('outputs', () => {
  it('gives ApiUrl and StorageUrl ending in the stage (no trailing slash), and the registry table name', () => {
    const outputs = template.toJSON().Outputs;
    expect(
      Object.keys(outputs)
        .filter((k) => !/(Queue|Dlq)Url$|^DashboardName$/.test(k))
        .sort(),
    ).toEqual([
      'ApiUrl',
      'ConsoleBucketName',
      'ConsoleUrl',
      'ExportsBucketName',
      'FirmwareBucketName',
      'MqttEndpoint',
      'RegistryTableName',
      'RolloutSweepRuleName',
      'StorageUrl',
      'UserPoolClientId',
      'UserPoolId',
    ]);
    for (const name of ['ApiUrl', 'StorageUrl']) {
      const parts: unknown[] = outputs[name].Value['Fn::Join'][1];
      expect(parts[0]).toBe('https://');
      expect(targetOf(parts.at(-1))).toMatch(/Stagev3/);
    }
    expect(outputs.RegistryTableName.Value).toEqual({ Ref: tableId() });
  });
});

describe('CloudFormation Validate', () => {
  it('finds nothing in the template (CDK runs it at synth; its findings are only warnings there)', () => {
    // Written by each synthesis the validation ran in: a synthesis without it fails here too.
    const report = JSON.parse(readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{ pluginName: string; violations: Array<{ ruleName: string; description: string }> }>;
    };
    expect(report.pluginReports.flatMap((r) => r.violations.map((v) => `${r.pluginName} ${v.ruleName}: ${v.description}`))).toEqual([]);
  });
});

describe('cdk-nag', () => {
  it('reports no unacknowledged AwsSolutions error or warning', () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
  });

  it('gives a reason for every acknowledged finding', () => {
    const acknowledgments = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string>));
    expect(acknowledgments.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledgments) expect({ id, reason: reason.length >= 40 }).toEqual({ id, reason: true });
  });
});

describe('operator metrics and traces (DESIGN §13)', () => {
  const dashboardBody = () => {
    const body = template.toJSON().Resources[idOf(stack.queues.dashboard)].Properties.DashboardBody;
    // The body is a Fn::Join of text and references: its text is what the console renders.
    return JSON.stringify(body).replaceAll('\\"', '"');
  };

  it('draws every operator metric the handlers emit, in the Fleetstream namespace with their service dimension, on the dashboard', () => {
    const body = dashboardBody();

    for (const { name, graph } of OPERATOR_METRICS) {
      expect(body).toContain(`"${METRICS_NAMESPACE}","${name}","service","${METRICS_SERVICE}"`);
      expect(body).toContain(`${graph} (per minute)`);
    }
    expect(body).toContain(`"${METRICS_NAMESPACE}","${STAGE_THROTTLED_METRIC}"`);
  });

  it('counts the requests the stage’s own throttle refused from the access log (they reach no handler)', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      LogGroupName: { Ref: idOf(stack.api.accessLogs) },
      FilterPattern: '{ $.errorType = "THROTTLED" }',
      MetricTransformations: [{ MetricNamespace: METRICS_NAMESPACE, MetricName: STAGE_THROTTLED_METRIC, MetricValue: '1' }],
    });
  });

  it('traces the data path, the ingest and forwarder Lambdas, with X-Ray, and no other function', () => {
    const traced = Object.entries(appFunctions())
      .filter(([, fn]) => fn.Properties.TracingConfig?.Mode === 'Active')
      .map(([id]) => id)
      .sort();

    expect(traced).toEqual([functionId(stack.consumerFunctions.get('forwarder')!), functionId(stack.consumerFunctions.get('ingest')!)].sort());
    for (const id of traced) {
      const xray = statementsOfFunction(template, id).filter((s) => actionsOf(s).some((a) => a.startsWith('xray:')));
      expect(xray).toEqual([{ Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Effect: 'Allow', Resource: '*' }]);
    }
  });
});
