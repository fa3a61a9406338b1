import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { TableGrants, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Grant, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { BuildOptions } from 'esbuild';
import { fileURLToPath } from 'node:url';

/** Folder holding one sub-folder per handler, each with its `handler.ts`. */
export const LAMBDAS_DIR = fileURLToPath(new URL('../../lambdas/handlers/', import.meta.url));

/** The entry file of a handler folder under `lambdas/`. */
export const handlerEntry = (source: string) => `${LAMBDAS_DIR}${source}/handler.ts`;

/**
 * Credential sources the SDK's default chain only loads when the environment has no credentials,
 * which never happens on Lambda (the runtime sets AWS_ACCESS_KEY_ID and friends). Left out of the
 * bundles, they resolve to the runtime's own copy of the SDK should they ever be needed: a third
 * less code to load on every cold start.
 */
const LAZY_CREDENTIAL_SOURCES = [
  '@aws-sdk/credential-provider-http',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-login',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/nested-clients',
  '@aws-sdk/token-providers',
  '@smithy/credential-provider-imds',
];

/**
 * How every handler is bundled. ESM lets esbuild tree-shake the ESM builds (`mainFields`) of
 * middy, zod, jose and the AWS SDK v3 clients. The SDK is bundled although the runtime ships
 * one: one tree-shaken file loads in about half the time of the runtime's hundreds of modules
 * (`npm run bench:cold-start`). Source maps are separate files without the sources: the code file
 * stays as small as minifying makes it.
 */
export const HANDLER_BUNDLING = {
  format: OutputFormat.ESM,
  target: 'node22',
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  externalModules: LAZY_CREDENTIAL_SOURCES,
  // the CommonJS parts of bundled packages call require(), which an ES module lacks
  banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  logLevel: LogLevel.WARNING,
} satisfies BundlingOptions;

/**
 * The same bundling as esbuild options (the flags NodejsFunction passes to esbuild), for tools
 * that bundle a handler outside CDK, such as the cold-start benchmark.
 *
 * @example await esbuild.build({ ...HANDLER_ESBUILD_OPTIONS, entryPoints: [handlerEntry('devices')], outfile: 'out/index.mjs' })
 */
export const HANDLER_ESBUILD_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: HANDLER_BUNDLING.format,
  target: HANDLER_BUNDLING.target,
  mainFields: HANDLER_BUNDLING.mainFields,
  minify: HANDLER_BUNDLING.minify,
  sourcemap: HANDLER_BUNDLING.sourceMap,
  sourcesContent: HANDLER_BUNDLING.sourcesContent,
  external: HANDLER_BUNDLING.externalModules,
  banner: { js: HANDLER_BUNDLING.banner },
  logLevel: HANDLER_BUNDLING.logLevel,
} satisfies BuildOptions;

/**
 * Environment every handler gets: stack traces point into the TypeScript sources through the
 * bundled source maps.
 */
export const HANDLER_ENVIRONMENT = { NODE_OPTIONS: '--enable-source-maps' } as const;

/** What a handler may do with a table it is bound to. */
export type TableAccess =
  | 'get-item'
  | 'get-update'
  | 'batch-get-update'
  | 'read-update'
  | 'storage'
  | 'query-update'
  | 'read-puts-update'
  | 'read-items-write-one'
  | 'read-write';

const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
const WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'];

/** What a handler may do with a queue it is bound to. */
export type QueueAccess = 'send' | 'consume';

/** The IAM actions of each kind of table access. */
export const TABLE_ACTIONS: Readonly<Record<TableAccess, readonly string[]>> = {
  'get-item': ['dynamodb:GetItem'],
  // Items looked up and counters added to (usage, a request's rate, a device's points), one at a
  // time; the retention re-stamp's workspace and an export's run, read and changed by their keys.
  'get-update': ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  // The same, and items read by their keys in batches (the ingest: its batch's devices' locators;
  // an export with names: its devices and fleets).
  'batch-get-update': ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
  // Items looked up, counters added to, and queries (a workspace's usage days).
  'read-update': ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
  // The storage API: items read by their keys (a workspace, the fleets a filter names, an export),
  // the request counted (its key's rate, the workspace's usage), an export written (and deleted
  // again when its run cannot be queued), a workspace's exports queried.
  storage: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
  // Queries and conditional updates of one item at a time: no puts, no deletes, no batches (the sweep).
  'query-update': ['dynamodb:Query', 'dynamodb:UpdateItem'],
  // Reads, puts and updates one item at a time or in transactions (TransactWriteItems is
  // authorized as the Put and Update inside it), and puts in batches (BatchWriteItem, which IAM
  // cannot narrow to puts; the code issues no deletes): the registry stream's consumer.
  // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
  'read-puts-update': ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:UpdateItem'],
  // Reads of every kind, and writes of one item at a time or in transactions, never in batches
  // (no BatchWriteItem): the groups' routes (a group put, changed or deleted with its quota's
  // count, its devices read as the device list reads them).
  'read-items-write-one': [...READ_ACTIONS, 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
  'read-write': [...READ_ACTIONS, ...WRITE_ACTIONS],
};

/** What a handler may do with an index of a table it is bound to: query it (an index takes no other item action). */
export const INDEX_ACTIONS: readonly string[] = ['dynamodb:Query'];

/** A handler's memory unless it sets its own (MB; CPU grows with memory, and cold starts with it shrink). */
export const HANDLER_MEMORY_MB = 512;

/** The few settings a handler may change; everything else is the project's default. */
export interface HandlerFunctionProps {
  /** The handler's folder under `lambdas/` (its entry is `lambdas/<source>/handler.ts`). */
  readonly source: string;
  readonly description?: string;
  /** @default HANDLER_MEMORY_MB */
  readonly memorySize?: number;
  /** @default 10 seconds */
  readonly timeout?: Duration;
  readonly environment?: Record<string, string>;
  /** @default one month */
  readonly logRetention?: RetentionDays;
  /** What happens to the log group when it leaves the stack. @default RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** X-Ray active tracing (the data path's Lambdas, whose Powertools Tracer sends the segments). @default off */
  readonly tracing?: boolean;
}

/**
 * A Lambda function for one handler folder, with the project's defaults set once: Node.js 22 on
 * arm64, bundled by esbuild as ESM with source maps, its own log group with a retention, and a
 * role that may write only to that log group. Access to anything else comes from the `bind*`
 * helpers, which grant the least the handler needs and tell it where the resource is.
 */
export class HandlerFunction extends NodejsFunction {
  /** The handler's folder under `lambdas/`. */
  readonly source: string;

  constructor(scope: Construct, id: string, props: HandlerFunctionProps) {
    // The role and the log group are siblings of the function, because the function needs them
    // at construction: our own role instead of the default one that carries the AWS managed
    // AWSLambdaBasicExecutionRole, which may write to every log group of the account.
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs the ${props.source} handler`,
    });
    logGroup.grantWrite(role);
    super(scope, id, {
      entry: handlerEntry(props.source),
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? HANDLER_MEMORY_MB,
      timeout: props.timeout ?? Duration.seconds(10),
      environment: { ...HANDLER_ENVIRONMENT, ...props.environment },
      bundling: HANDLER_BUNDLING,
      logGroup,
      role,
      ...(props.tracing ? { tracing: Tracing.ACTIVE } : {}),
    });
    this.source = props.source;
    if (props.tracing) {
      Validations.of(role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray’s PutTraceSegments and PutTelemetryRecords, which Lambda active tracing grants, take no resource-level permissions: their resource is *.',
      });
    }
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason: 'DESIGN §2 fixes the runtime to Node.js 22 LTS (nodejs22.x), the version the local runtime and the tests run on.',
    });
  }

  /**
   * Lets the handler use a DynamoDB table and puts its name in `envVar`: `get-item` allows only
   * GetItem (an authorizer's lookup); `get-update` GetItem and UpdateItem (lookups and counters);
   * `read-update` those and Query; `storage` the storage API's (those, BatchGetItem, and
   * PutItem and DeleteItem of exports); `query-update` Query and UpdateItem (the sweep);
   * `read-puts-update` GetItem, Query, PutItem, BatchWriteItem and UpdateItem (single items, batches of
   * puts and transactions), no deletes (the registry stream's consumer); `read-write` allows the item-level actions the stores issue, batches and transactions included (TransactWriteItems is authorized per
   * Put/Update/Delete/ConditionCheck inside it). Each of `indexes` may be queried, by its own ARN
   * (`<table>/index/<name>`), and no other index. Narrower than CDK's grantReadWriteData: no Scan,
   * no DescribeTable, no streams.
   */
  bindTable(table: ITable, envVar: string, access: TableAccess, options: { indexes?: readonly string[] } = {}): this {
    // Not table.grant(): once a table has an index, CDK's grant adds `<table>/index/*` to every
    // statement, which would let each handler query every index, present and future.
    TableGrants.fromTable(table, undefined, false).actions(this, ...TABLE_ACTIONS[access]);
    if (options.indexes?.length) {
      Grant.addToPrincipal({ grantee: this, actions: [...INDEX_ACTIONS], resourceArns: options.indexes.map((name) => `${table.tableArn}/index/${name}`) });
    }
    this.addEnvironment(envVar, table.tableName);
    return this;
  }

  /**
   * Lets the handler use an SQS queue and puts its URL in `envVar`: `send` allows SendMessage
   * (and its batch form); `consume` allows receiving, deleting and changing the visibility of
   * messages, which a consumer needs to back a failed message off. A KMS-encrypted queue's key
   * is granted with it.
   */
  bindQueue(queue: IQueue, envVar: string, access: QueueAccess): this {
    if (access === 'send') queue.grantSendMessages(this);
    else queue.grantConsumeMessages(this);
    this.addEnvironment(envVar, queue.queueUrl);
    return this;
  }
}
