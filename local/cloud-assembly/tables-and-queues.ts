import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  UpdateTableCommand,
  type CreateTableCommandInput,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { deleteTables, ensureIndexes, ensureTimeToLive } from '../dynamodb-local';
import { localStreamArn } from './iam';
import { ACCOUNT, type RunContext } from './run-context';
import { resourcesOfType } from './template';

/** The tables' streams by their ARN here: the engine's ARN, and whether the table was kept from an earlier run. */
export type TableStreams = Map<string, { engineArn: string; kept: boolean }>;

/**
 * Creates the tables as declared. A stream's ARN is the engine's (its label), in the deployment's
 * region. On a shared engine (`dynamoDbEndpoint`) each table's name gets this run's suffix, as two
 * deployments of one stack in two accounts have tables of one name each, and the run deletes them
 * at its stop.
 */
export const createTables = async ({ stops, template, engines, region, physical, resolve, nameOf, tableSuffix: suffix }: RunContext): Promise<TableStreams> => {
  const client = new DynamoDBClient({ endpoint: engines.dynamo.endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const names: string[] = [];
  if (suffix) stops.push(() => deleteTables(engines.dynamo.endpoint, names));
  const streams: TableStreams = new Map();
  for (const [id, table] of resourcesOfType(template, 'AWS::DynamoDB::Table')) {
    const props = table.Properties ?? {};
    const name = `${nameOf(id, props.TableName)}${suffix}`;
    names.push(name);
    const { Table, kept } = await createTable(client, {
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: props.KeySchema,
      AttributeDefinitions: props.AttributeDefinitions,
      ...(props.GlobalSecondaryIndexes
        ? { GlobalSecondaryIndexes: props.GlobalSecondaryIndexes.map(({ ContributorInsightsSpecification: _c, ...g }: Record<string, unknown>) => g) }
        : {}),
      ...(props.LocalSecondaryIndexes ? { LocalSecondaryIndexes: props.LocalSecondaryIndexes } : {}),
      ...(props.StreamSpecification ? { StreamSpecification: { StreamEnabled: true, StreamViewType: props.StreamSpecification.StreamViewType } } : {}),
    });
    // TTL as declared: DynamoDB Local deletes expired items within seconds (DynamoDB within days).
    if (props.TimeToLiveSpecification?.Enabled) await ensureTimeToLive(client, name, String(resolve(props.TimeToLiveSpecification.AttributeName)));
    const arn = `arn:aws:dynamodb:${region}:${ACCOUNT}:table/${name}`;
    const attributes: Record<string, string> = { Arn: arn };
    if (Table.LatestStreamArn && Table.StreamSpecification?.StreamEnabled) {
      attributes.StreamArn = localStreamArn({ region, account: ACCOUNT }, Table.LatestStreamArn);
      streams.set(attributes.StreamArn, { engineArn: Table.LatestStreamArn, kept });
    }
    physical.set(id, { ref: name, attributes });
  }
  client.destroy();
  return streams;
};

/** Creates the queues as declared: those without a redrive policy (the DLQs) first, so that redrive targets exist. */
export const createQueues = ({ template, engines, physical, resolve, nameOf }: RunContext): void => {
  const queues = resourcesOfType(template, 'AWS::SQS::Queue').sort(
    ([, a], [, b]) => Number(Boolean(a.Properties?.RedrivePolicy)) - Number(Boolean(b.Properties?.RedrivePolicy)),
  );
  for (const [id, queue] of queues) {
    const props = queue.Properties ?? {};
    const name = nameOf(id, props.QueueName);
    const attributes: Record<string, string> = {};
    for (const key of [
      'VisibilityTimeout',
      'MessageRetentionPeriod',
      'DelaySeconds',
      'ReceiveMessageWaitTimeSeconds',
      'MaximumMessageSize',
      'FifoQueue',
      'ContentBasedDeduplication',
    ]) {
      if (props[key] !== undefined) attributes[key] = String(resolve(props[key]));
    }
    if (props.RedrivePolicy) attributes.RedrivePolicy = JSON.stringify(resolve(props.RedrivePolicy));
    const created = engines.sqs.createQueue(name, { attributes });
    physical.set(id, { ref: created.queueUrl, attributes: { Arn: created.queueArn, QueueUrl: created.queueUrl, QueueName: name } });
  }
};

/**
 * Creates a table as declared, unless it was kept in the data folder from an earlier run; a kept
 * table whose stream differs from the declared one gets the declared stream, as an update of
 * StreamSpecification would, and one without a declared global secondary index gets it (waited for
 * until ACTIVE). Resolves with the table's description.
 */
const createTable = async (client: DynamoDBClient, input: CreateTableCommandInput): Promise<{ Table: TableDescription; kept: boolean }> => {
  const describe = async () => (await client.send(new DescribeTableCommand({ TableName: input.TableName }))).Table!;
  let existing: TableDescription | undefined;
  try {
    existing = await describe();
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  if (!existing) {
    const { TableDescription } = await client.send(new CreateTableCommand(input));
    return { Table: TableDescription!, kept: false };
  }
  // Indexes the template adds to a kept table are created, as CloudFormation adds them in place.
  const indexes = (input.GlobalSecondaryIndexes ?? []).map((gsi) => ({
    gsi,
    attributes: (input.AttributeDefinitions ?? []).filter((a) => gsi.KeySchema?.some((k) => k.AttributeName === a.AttributeName)),
  }));
  const added = await ensureIndexes(client, input.TableName!, indexes);
  const wanted = input.StreamSpecification;
  const has = existing.StreamSpecification;
  if (wanted && !(has?.StreamEnabled && has.StreamViewType === wanted.StreamViewType)) {
    // A stream of another view type must be turned off before the wanted one is turned on.
    if (has?.StreamEnabled) await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: { StreamEnabled: false } }));
    await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: wanted }));
    return { Table: await describe(), kept: false };
  }
  return { Table: added.length ? await describe() : existing, kept: true };
};
