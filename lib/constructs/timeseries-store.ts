import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-timestream';
import { Construct } from 'constructs';
import { TIMESERIES_KEY, TIMESERIES_TTL_ATTRIBUTE } from '../../lambdas/stores/timeseries/keys';
import type { HandlerFunction } from './handler-function';
import type { TimeseriesBackend } from '../stack-config';

/** Settings of the time-series store. */
export interface TimeseriesStoreProps {
  /** `dynamodb` (works in every account) or `timestream` (Timestream for LiveAnalytics, DESIGN §5). */
  readonly backend: TimeseriesBackend;
  /** @default RETAIN: the store holds every data point the devices sent. */
  readonly removalPolicy?: RemovalPolicy;
  /** Timestream: hours a point stays in the memory store (fast writes and queries). @default 24 */
  readonly memoryRetentionHours?: number;
  /** Timestream: days a point stays in the magnetic store, after which it is deleted. @default 3650 */
  readonly magneticRetentionDays?: number;
}

// DynamoDB item actions of the store (lambdas/stores/timeseries/dynamodb.ts): the storage query
// reads with Query; the ingest puts points with BatchWriteItem, and nothing else; a retention
// re-stamp reads keys with Query and sets each item's expiry with UpdateItem; a purge (the same
// consumer) reads items with Query, deletes them and stamps hours with BatchWriteItem, and
// rewrites packs with UpdateItem.
const DYNAMODB_READ = ['dynamodb:Query'];
const DYNAMODB_WRITE = ['dynamodb:BatchWriteItem'];
const DYNAMODB_RETENTION = ['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'];

/**
 * The time-series store of DESIGN §5, chosen at deploy time (`-c timeseries=dynamodb|timestream`):
 * an on-demand DynamoDB table with the keys of `lambdas/stores/timeseries/keys.ts`, or a
 * Timestream database and table with magnetic-store writes on (late points are accepted). Its
 * `bind*` helpers grant a handler the least it needs and set the variables
 * `lambdas/shared/env.ts` reads.
 */
export class TimeseriesStore extends Construct {
  readonly backend: TimeseriesBackend;
  /** The table of the `dynamodb` backend. */
  readonly table?: Table;
  /** The database and table of the `timestream` backend. */
  readonly timestreamDatabase?: CfnDatabase;
  readonly timestreamTable?: CfnTable;

  constructor(scope: Construct, id: string, props: TimeseriesStoreProps) {
    super(scope, id);
    this.backend = props.backend;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    if (props.backend === 'dynamodb') {
      this.table = new Table(this, 'Table', {
        partitionKey: { name: TIMESERIES_KEY.partition, type: AttributeType.STRING },
        sortKey: { name: TIMESERIES_KEY.sort, type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: TableEncryption.AWS_MANAGED,
        removalPolicy,
        deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
        // A workspace's data retention sets each item's expiry; DynamoDB deletes expired items
        // within days, free of write charges (reads leave them out at once).
        timeToLiveAttribute: TIMESERIES_TTL_ATTRIBUTE,
      });
      return;
    }
    this.timestreamDatabase = new CfnDatabase(this, 'Database');
    Validations.of(this.timestreamDatabase).acknowledge({
      id: 'AwsSolutions-TS3',
      reason: 'Timestream encrypts at rest with an AWS owned key; like the registry table (AWS managed key), no customer key to rotate and pay for.',
    });
    this.timestreamTable = new CfnTable(this, 'Table', {
      databaseName: this.timestreamDatabase.ref,
      retentionProperties: {
        MemoryStoreRetentionPeriodInHours: String(props.memoryRetentionHours ?? 24),
        MagneticStoreRetentionPeriodInDays: String(props.magneticRetentionDays ?? 3650),
      },
      magneticStoreWriteProperties: { EnableMagneticStoreWrites: true },
    });
    this.timestreamDatabase.applyRemovalPolicy(removalPolicy);
    this.timestreamTable.applyRemovalPolicy(removalPolicy);
    Validations.of(this).acknowledge({
      id: 'CloudFormation-Validate::W3697',
      reason:
        'Timestream for LiveAnalytics is chosen only with -c timeseries=timestream, for accounts that already use it; docs/deployment.md says AWS closed it to new customers on 2025-06-20.',
    });
  }

  /** Lets a handler run storage queries and tells it where the store is. */
  bindReader(fn: HandlerFunction): this {
    return this.bind(fn, DYNAMODB_READ, ['timestream:Select'], ['timestream:CancelQuery']);
  }

  /**
   * Lets the storage query keep the rollups of sealed hours (`lambdas/domain/data/rollups.ts`): BatchWriteItem on
   * the table, of items whose partition key is a rollup's (`R#…`) only, never a point or a stamp.
   * Timestream aggregates in its SQL: nothing to grant.
   */
  bindRollupKeeper(fn: HandlerFunction): this {
    if (this.table) {
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: DYNAMODB_WRITE,
          resources: [this.table.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['R#*'] } },
        }),
      );
    }
    return this;
  }

  /**
   * Tells a handler which backend holds the points, granting nothing: the devices handler refuses
   * `?purge=data` where the store cannot delete points (Timestream).
   */
  bindBackendName(fn: HandlerFunction): this {
    fn.addEnvironment('TIMESERIES_BACKEND', this.backend);
    return this;
  }

  /** Lets a handler store points (deduplicated by conditional writes) and tells it where the store is. */
  bindWriter(fn: HandlerFunction): this {
    return this.bind(fn, DYNAMODB_WRITE, ['timestream:WriteRecords'], []);
  }

  /**
   * Lets a handler re-stamp the expiry of a workspace's points and purge a deleted device's or
   * workspace's (the retention queue's consumer). Timestream has no per-point expiry or delete:
   * the handler only learns the backend, and is granted nothing.
   */
  bindRestamper(fn: HandlerFunction): this {
    if (!this.table) {
      fn.addEnvironment('TIMESERIES_BACKEND', this.backend);
      return this;
    }
    return this.bind(fn, DYNAMODB_RETENTION, [], []);
  }

  private bind(fn: HandlerFunction, dynamoActions: string[], tableActions: string[], accountActions: string[]): this {
    fn.addEnvironment('TIMESERIES_BACKEND', this.backend);
    if (this.table) {
      this.table.grant(fn, ...dynamoActions);
      fn.addEnvironment('TIMESERIES_TABLE', this.table.tableName);
      return this;
    }
    const database = this.timestreamDatabase!;
    const table = this.timestreamTable!;
    fn.addEnvironment('TIMESTREAM_DATABASE', database.ref);
    fn.addEnvironment('TIMESTREAM_TABLE', table.attrName);
    fn.addToRolePolicy(new PolicyStatement({ actions: tableActions, resources: [table.attrArn] }));
    // Endpoint discovery (both SDK clients call it first) and CancelQuery take no resource.
    fn.addToRolePolicy(new PolicyStatement({ actions: ['timestream:DescribeEndpoints', ...accountActions], resources: ['*'] }));
    Validations.of(fn.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'timestream:DescribeEndpoints (endpoint discovery) and timestream:CancelQuery take no resource-level permissions; the table actions name the one table.',
    });
    return this;
  }
}
