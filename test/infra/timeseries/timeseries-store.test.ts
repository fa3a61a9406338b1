import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { HandlerFunction } from '../../../lib/constructs/handler-function';
import { FleetstreamStack } from '../../../lib/fleetstream-stack';
import { configFromContext } from '../../../lib/stack-config';
import { actionsOf, methodsByRoute, statementsOfFunction, targetOf } from '../template-queries';

/** The stack synthesized with this context, without bundling (these checks are about wiring). */
const synth = (context: Record<string, string> = {}) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
  const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const environmentOf = (fn: HandlerFunction) => resources[idOf(fn)].Properties.Environment?.Variables ?? {};
  /** A function's statements about the time-series store (DynamoDB on the store's table, or Timestream). */
  const storeStatements = (fn: HandlerFunction) =>
    statementsOfFunction(template, idOf(fn)).filter((s) =>
      actionsOf(s).some(
        (a) =>
          a.startsWith('timestream:') ||
          (a.startsWith('dynamodb:') && JSON.stringify(s.Resource).includes(stack.timeseries.table ? idOf(stack.timeseries.table) : '-')),
      ),
    );
  const query = stack.routeHandlers.get('timeseries')!;
  const ingest = stack.consumerFunctions.get('ingest');
  const restamper = stack.consumerFunctions.get('retention');
  const exporter = stack.consumerFunctions.get('export');
  return { stack, template, resources, idOf, environmentOf, storeStatements, query, ingest, restamper, exporter };
};

describe('time-series store: dynamodb (the default)', () => {
  const { stack, template, resources, idOf, environmentOf, storeStatements, query, ingest, restamper, exporter } = synth();
  const tableId = () => idOf(stack.timeseries.table!);

  it('is an on-demand, encrypted, point-in-time-recoverable table keyed pk/sk, kept when the stack goes', () => {
    const table = resources[tableId()];

    expect(table.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
    expect(table.DeletionPolicy).toBe('Retain');
    // A workspace's data retention sets each item's expiry in this attribute.
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires', Enabled: true });
    template.resourceCountIs('AWS::Timestream::Table', 0);
  });

  it('lets the storage query and the export consumer Query the table, and tells them where the table is', () => {
    for (const reader of [query, exporter!]) {
      expect(storeStatements(reader)[0]).toEqual({ Action: 'dynamodb:Query', Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] });
      expect(environmentOf(reader)).toMatchObject({ TIMESERIES_BACKEND: 'dynamodb', TIMESERIES_TABLE: { Ref: tableId() } });
    }
    expect(storeStatements(exporter!)).toHaveLength(1);
  });

  it('lets the storage query put rollups, and only rollups: BatchWriteItem of items whose partition key starts R#', () => {
    expect(storeStatements(query).slice(1)).toEqual([
      {
        Action: 'dynamodb:BatchWriteItem',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [tableId(), 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['R#*'] } },
      },
    ]);
  });

  it('lets the ingest consumer put points with BatchWriteItem, nothing more', () => {
    expect(ingest).toBeDefined();
    expect(storeStatements(ingest!).flatMap(actionsOf).sort()).toEqual(['dynamodb:BatchWriteItem']);
    expect(environmentOf(ingest!)).toMatchObject({ TIMESERIES_BACKEND: 'dynamodb', TIMESERIES_TABLE: { Ref: tableId() } });
  });

  it('lets the retention consumer read items, set expiries, rewrite and delete packs with Query, UpdateItem and BatchWriteItem, nothing more', () => {
    expect(restamper).toBeDefined();
    expect(storeStatements(restamper!)).toEqual([
      { Action: ['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'], Effect: 'Allow', Resource: [{ 'Fn::GetAtt': [tableId(), 'Arn'] }] },
    ]);
    expect(environmentOf(restamper!)).toMatchObject({ TIMESERIES_BACKEND: 'dynamodb', TIMESERIES_TABLE: { Ref: tableId() } });
  });

  it('tells the devices handler the backend (it refuses ?purge=data where points cannot be deleted), granting it nothing', () => {
    const devices = stack.routeHandlers.get('devices')!;
    expect(environmentOf(devices)).toMatchObject({ TIMESERIES_BACKEND: 'dynamodb' });
    expect(storeStatements(devices)).toEqual([]);
  });

  it('gives no other handler access to the table', () => {
    for (const fn of [...stack.routeHandlers.values(), ...stack.authorizerFunctions.values(), ...stack.consumerFunctions.values()]) {
      if (fn === query || fn === ingest || fn === restamper || fn === exporter) continue;
      expect({ source: fn.source, statements: storeStatements(fn) }).toEqual({ source: fn.source, statements: [] });
    }
  });

  it('streams the storage query through API Gateway', () => {
    const method = methodsByRoute(template).get('GET /timeseries/{workspaceId}/data')!;

    expect(method.Integration.ResponseTransferMode).toBe('STREAM');
    expect(JSON.stringify(method.Integration.Uri)).toContain('response-streaming-invocations');
    expect(JSON.stringify(method.Integration.Uri)).toContain(idOf(query));
  });
});

describe('time-series store: timestream', () => {
  const { stack, template, resources, environmentOf, storeStatements, query, ingest, restamper, exporter } = synth({
    timeseries: 'timestream',
    timestreamMemoryRetentionHours: '12',
    timestreamMagneticRetentionDays: '365',
  });
  const tableId = () => stack.getLogicalId(stack.timeseries.timestreamTable!);
  const databaseId = () => stack.getLogicalId(stack.timeseries.timestreamDatabase!);

  it('is a Timestream database and table with the retentions from context and magnetic-store writes on', () => {
    expect(resources[tableId()].Properties).toEqual({
      DatabaseName: { Ref: databaseId() },
      RetentionProperties: { MemoryStoreRetentionPeriodInHours: '12', MagneticStoreRetentionPeriodInDays: '365' },
      MagneticStoreWriteProperties: { EnableMagneticStoreWrites: true },
    });
    expect(resources[tableId()].DeletionPolicy).toBe('Retain');
    expect(resources[databaseId()].DeletionPolicy).toBe('Retain');
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::Table')).toHaveLength(1);
  });

  it('lets the storage query and the export consumer select from the one table, and only discover endpoints and cancel queries beyond it', () => {
    for (const reader of [query, exporter!]) {
      expect(storeStatements(reader)).toEqual([
        { Action: 'timestream:Select', Effect: 'Allow', Resource: { 'Fn::GetAtt': [tableId(), 'Arn'] } },
        { Action: ['timestream:DescribeEndpoints', 'timestream:CancelQuery'], Effect: 'Allow', Resource: '*' },
      ]);
      expect(environmentOf(reader)).toMatchObject({
        TIMESERIES_BACKEND: 'timestream',
        TIMESTREAM_DATABASE: { Ref: databaseId() },
        TIMESTREAM_TABLE: { 'Fn::GetAtt': [tableId(), 'Name'] },
      });
    }
  });

  it('lets the ingest consumer write records to the one table', () => {
    expect(storeStatements(ingest!)).toEqual([
      { Action: 'timestream:WriteRecords', Effect: 'Allow', Resource: { 'Fn::GetAtt': [tableId(), 'Arn'] } },
      { Action: 'timestream:DescribeEndpoints', Effect: 'Allow', Resource: '*' },
    ]);
    expect(targetOf(environmentOf(ingest!).TIMESTREAM_TABLE)).toBe(tableId());
  });

  it('grants the retention consumer nothing of Timestream: the table’s retention removes points, for every workspace', () => {
    expect(storeStatements(restamper!)).toEqual([]);
    expect(environmentOf(restamper!)).toMatchObject({ TIMESERIES_BACKEND: 'timestream' });
    expect(environmentOf(restamper!).TIMESTREAM_TABLE).toBeUndefined();
  });

  it('tells the devices handler the backend, so that it refuses ?purge=data', () => {
    expect(environmentOf(stack.routeHandlers.get('devices')!)).toMatchObject({ TIMESERIES_BACKEND: 'timestream' });
  });

  it('passes cdk-nag, its wildcard acknowledged with a reason', () => {
    const report = new AwsSolutionsChecks().validateScope(stack);

    expect(report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
    template.resourceCountIs('AWS::Timestream::Database', 1);
  });
});

describe('time-series context', () => {
  it.each([
    [{ timeseries: 'influx' }, /timeseries/],
    [{ timeseries: 'timestream', timestreamMemoryRetentionHours: '0' }, /timestreamMemoryRetentionHours/],
    [{ timeseries: 'timestream', timestreamMagneticRetentionDays: '73001' }, /timestreamMagneticRetentionDays/],
  ])('refuses %j at synthesis, naming the key', (context, message) => {
    expect(() => synth(context)).toThrow(message);
  });
});
