import { App } from 'aws-cdk-lib';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext, type TimeseriesBackend } from '../../lib/stack-config';

/**
 * Resources that hold data: CloudFormation replaces one (a new, empty resource; the old one is
 * deleted or, with RETAIN, orphaned) when its logical ID changes or when a property that "requires
 * replacement" changes. Each is pinned here with those properties; a refactor that moves a
 * construct (new logical ID) or changes a key fails this test before it empties a table on the next
 * deploy. Changing a pin is a migration decision (export, new table, backfill), not a test fix.
 */
const STATEFUL_TYPES = [
  'AWS::DynamoDB::Table',
  'AWS::DynamoDB::GlobalTable',
  'AWS::SQS::Queue',
  'AWS::Timestream::Database',
  'AWS::Timestream::Table',
  'AWS::S3::Bucket',
  'AWS::Cognito::UserPool',
  'AWS::IoT::Thing',
  'AWS::Logs::LogGroup',
];

/**
 * The properties whose change replaces each kind of resource (CloudFormation's "Update requires:
 * Replacement"), as pinned below. GSIs do not replace a table, but changing one rebuilds the index
 * and breaks every reader of it during the deploy: pinned too. Log groups are left out: they hold
 * logs, not user data, and their names are generated.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-dynamodb-table.html
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sqs-queue.html
 */
const replacingProperties = (type: string, props: Record<string, any> = {}): Record<string, unknown> => {
  switch (type) {
    case 'AWS::DynamoDB::Table':
      return {
        TableName: props.TableName,
        KeySchema: props.KeySchema,
        // Only the key attributes' types matter; AttributeDefinitions lists those of the indexes too.
        KeyTypes: Object.fromEntries((props.AttributeDefinitions ?? []).map((a: any) => [a.AttributeName, a.AttributeType])),
        GlobalSecondaryIndexes: (props.GlobalSecondaryIndexes ?? []).map((g: any) => ({ IndexName: g.IndexName, KeySchema: g.KeySchema })),
        LocalSecondaryIndexes: (props.LocalSecondaryIndexes ?? []).map((l: any) => ({ IndexName: l.IndexName, KeySchema: l.KeySchema })),
        // StreamSpecification is not here: CloudFormation updates it without interruption (the
        // registry's stream was turned on in place).
      };
    case 'AWS::SQS::Queue':
      return { QueueName: props.QueueName, FifoQueue: props.FifoQueue ?? false };
    // https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-cognito-userpool.html
    case 'AWS::Cognito::UserPool':
      return { UsernameAttributes: props.UsernameAttributes, AliasAttributes: props.AliasAttributes, Schema: props.Schema };
    case 'AWS::S3::Bucket':
      return { BucketName: props.BucketName };
    case 'AWS::Timestream::Database':
      return { DatabaseName: props.DatabaseName };
    case 'AWS::Timestream::Table':
      return { DatabaseName: props.DatabaseName, TableName: props.TableName };
    default:
      return props;
  }
};

const PK_SK = {
  TableName: undefined,
  KeySchema: [
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'sk', KeyType: 'RANGE' },
  ],
  KeyTypes: { pk: 'S', sk: 'S' },
  GlobalSecondaryIndexes: [],
  LocalSecondaryIndexes: [],
};
const STANDARD_QUEUE = { QueueName: undefined, FifoQueue: false };
// The registry gained the sweep index (issue 19) in place: CloudFormation adds one GSI per update
// without interruption or replacement (it backfills while the table serves), and its key
// attributes join AttributeDefinitions, which updates in place too. A second index is another
// update of its own; renaming this one or changing its keys deletes and adds an index in one
// update, which CloudFormation refuses.
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-dynamodb-table.html#cfn-dynamodb-table-globalsecondaryindexes
const REGISTRY = {
  ...PK_SK,
  KeyTypes: { pk: 'S', sk: 'S', sweep_pk: 'S', sweep_sk: 'S', firmware_ref: 'S', status: 'S' },
  GlobalSecondaryIndexes: [
    {
      IndexName: 'sweep',
      KeySchema: [
        { AttributeName: 'sweep_pk', KeyType: 'HASH' },
        { AttributeName: 'sweep_sk', KeyType: 'RANGE' },
      ],
    },
    // Issue 19's firmware artifacts: added in place too, by a deploy after the one that added the sweep index.
    {
      IndexName: 'firmware-use',
      KeySchema: [
        { AttributeName: 'firmware_ref', KeyType: 'HASH' },
        { AttributeName: 'status', KeyType: 'RANGE' },
      ],
    },
  ],
};

/** Every stateful resource of the stack, by logical ID, as deployed today. */
const COMMON_PINS: Record<string, { type: string; props: Record<string, unknown> }> = {
  RegistryTableDB777839: { type: 'AWS::DynamoDB::Table', props: REGISTRY },
  QueuesIngestQueueD6ABE5D4: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesIngestDlq9A58644E: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesForwardQueue3AF73E64: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesForwardDlq9A2B7D94: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesMqttQueue53B89E3D: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesMqttDlqB8C45160: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesRetentionQueue098F574C: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesRetentionDlq6BF7C357: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesExportQueue2AFEC7CE: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesExportDlqAADC4FE7: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesAlarmNotificationsQueue2228AE3D: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  QueuesAlarmNotificationsDlq45304D09: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  RegistryStreamDlqA5A9418E: { type: 'AWS::SQS::Queue', props: STANDARD_QUEUE },
  // The console's users: a replaced pool is a new, empty one (every user signs up again, under new
  // subs that no account knows).
  UsersUserPool7E610616: {
    type: 'AWS::Cognito::UserPool',
    props: {
      UsernameAttributes: ['email'],
      AliasAttributes: undefined,
      Schema: [{ Mutable: true, Name: 'email', Required: true }],
    },
  },
  // Only the console's build (rewritten by every deploy), but its address is the distribution's origin.
  ConsoleBucket86B6957C: { type: 'AWS::S3::Bucket', props: { BucketName: undefined } },
  // Firmware images: a replaced bucket is a new, empty one, and every ready version's image is gone.
  BucketsFirmware892A229B: { type: 'AWS::S3::Bucket', props: { BucketName: undefined } },
  // Data exports: a replaced bucket is a new, empty one, and every ready export's file is gone.
  BucketsExportsEFF3E371: { type: 'AWS::S3::Bucket', props: { BucketName: undefined } },
  // The data buckets' server access logs: a replaced bucket is a new, empty one, and the logs kept so far are left in the old one.
  BucketsAccessLogsA5F88218: { type: 'AWS::S3::Bucket', props: { BucketName: undefined } },
};
const PINS: Record<TimeseriesBackend, typeof COMMON_PINS> = {
  dynamodb: { ...COMMON_PINS, TimeseriesTable945BC126: { type: 'AWS::DynamoDB::Table', props: PK_SK } },
  timestream: {
    ...COMMON_PINS,
    TimeseriesDatabaseAA5FA266: { type: 'AWS::Timestream::Database', props: { DatabaseName: undefined } },
    TimeseriesTable99C5E2CD: { type: 'AWS::Timestream::Table', props: { DatabaseName: { Ref: 'TimeseriesDatabaseAA5FA266' }, TableName: undefined } },
  },
};

type Resources = Record<string, { Type: string; Properties?: Record<string, any> }>;

/** What a deploy of `resources` would replace (and so empty), one message per pin it breaks. */
const pinViolations = (resources: Resources, pins: typeof COMMON_PINS): string[] => {
  const violations: string[] = [];
  for (const [logicalId, pin] of Object.entries(pins)) {
    const resource = resources[logicalId];
    if (!resource) {
      const sameType = Object.entries(resources)
        .filter(([, r]) => r.Type === pin.type)
        .map(([id]) => id);
      violations.push(
        `${pin.type} ${logicalId} is gone from the template (of its type now: ${sameType.join(', ') || 'none'}). ` +
          'A deploy would create a new, empty resource and delete (or orphan) the old one with its data. ' +
          'Keep the construct ID and path (or overrideLogicalId), or plan a migration and then update this pin.',
      );
      continue;
    }
    if (resource.Type !== pin.type) {
      violations.push(`${logicalId} changed type from ${pin.type} to ${resource.Type}: a deploy would replace it and lose its data.`);
      continue;
    }
    const now = replacingProperties(resource.Type, resource.Properties);
    for (const [property, pinned] of Object.entries(pin.props)) {
      if (JSON.stringify(now[property]) !== JSON.stringify(pinned)) {
        violations.push(
          `${logicalId}.${property} changed from ${JSON.stringify(pinned)} to ${JSON.stringify(now[property])}: ` +
            `this change requires replacement, so a deploy would replace the ${pin.type} with a new, empty one. ` +
            'Plan a migration, then update this pin.',
        );
      }
    }
  }
  for (const [id, r] of Object.entries(resources)) {
    if (STATEFUL_TYPES.includes(r.Type) && r.Type !== 'AWS::Logs::LogGroup' && !pins[id]) {
      violations.push(`${id} (${r.Type}) holds data but is not pinned: add it to PINS so that no refactor replaces it unnoticed.`);
    }
  }
  return violations;
};

// Bundling is skipped (no handler code is looked at): synthesis takes a few seconds.
const synthesize = (backend: TimeseriesBackend, change?: (stack: FleetstreamStack) => void): Resources => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], timeseries: backend } });
  const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
  change?.(stack);
  return app.synth().getStackByName('Fleetstream').template.Resources;
};

describe.each(['dynamodb', 'timestream'] as const)('stateful resources (timeseries=%s)', (backend) => {
  it('keeps every table, queue and store with its logical ID, type and replacing properties', () => {
    expect(pinViolations(synthesize(backend), PINS[backend])).toEqual([]);
  });
});

describe('the pin check', () => {
  const cfn = (construct: { node: { defaultChild?: unknown } }) =>
    construct.node.defaultChild as { overrideLogicalId: (id: string) => void; addPropertyOverride: (path: string, value: unknown) => void };

  it('says a deploy would replace the registry table when its construct moves', () => {
    const resources = synthesize('dynamodb', (stack) => cfn(stack.registry.table).overrideLogicalId('RegistryTableMoved'));

    expect(pinViolations(resources, PINS.dynamodb)).toEqual([
      expect.stringMatching(/^AWS::DynamoDB::Table RegistryTableDB777839 is gone .*RegistryTableMoved.*new, empty resource/),
      expect.stringMatching(/^RegistryTableMoved \(AWS::DynamoDB::Table\) holds data but is not pinned/),
    ]);
  });

  it('says a deploy would replace a table whose key schema changes, and a queue that becomes FIFO', () => {
    const resources = synthesize('dynamodb', (stack) => {
      cfn(stack.timeseries.table!).addPropertyOverride('KeySchema.1.AttributeName', 'ts');
      cfn(stack.queues.queues.forward.dlq).addPropertyOverride('FifoQueue', true);
    });

    expect(pinViolations(resources, PINS.dynamodb)).toEqual([
      expect.stringMatching(/^QueuesForwardDlq9A2B7D94\.FifoQueue changed from false to true: .*replace the AWS::SQS::Queue with a new, empty one/),
      expect.stringMatching(/^TimeseriesTable945BC126\.KeySchema changed .*"ts".*replace the AWS::DynamoDB::Table/),
    ]);
  });

  it('says a deploy would rebuild the registry’s sweep index when its keys change', () => {
    const resources = synthesize('dynamodb', (stack) =>
      cfn(stack.registry.table).addPropertyOverride('GlobalSecondaryIndexes.0.KeySchema.1.AttributeName', 'due'),
    );

    expect(pinViolations(resources, PINS.dynamodb)).toEqual([expect.stringMatching(/^RegistryTableDB777839\.GlobalSecondaryIndexes changed .*"due"/)]);
  });
});
