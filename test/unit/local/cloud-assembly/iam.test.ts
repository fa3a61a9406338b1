import {
  dynamoAccesses,
  evaluate,
  iotAccesses,
  iotDataAccesses,
  localStreamArn,
  s3Accesses,
  sesAccesses,
  sqsAccesses,
  streamsAccesses,
  unusedGrants,
  wildcardMatch,
  type PolicyStatement,
} from '../../../../local/cloud-assembly/iam';

const CTX = { region: 'us-east-1', account: '000000000000' };
const TABLE = 'arn:aws:dynamodb:us-east-1:000000000000:table/Registry';

describe('evaluate', () => {
  const allowRead: PolicyStatement = { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:Query'], Resource: [TABLE] };

  it.each([
    ['an allowed action on its resource', [allowRead], 'dynamodb:GetItem', TABLE, 'allow'],
    ['an action no statement names (implicit deny)', [allowRead], 'dynamodb:PutItem', TABLE, 'implicit-deny'],
    ['another table', [allowRead], 'dynamodb:GetItem', `${TABLE}2`, 'implicit-deny'],
    ['an index of the table, which the table ARN does not cover', [allowRead], 'dynamodb:Query', `${TABLE}/index/byName`, 'implicit-deny'],
    ['an index under a wildcard', [{ ...allowRead, Resource: [`${TABLE}/index/*`] }], 'dynamodb:Query', `${TABLE}/index/byName`, 'allow'],
    ['a wildcard action, in any case', [{ Effect: 'Allow', Action: 'DynamoDB:Get*', Resource: '*' }], 'dynamodb:GetItem', TABLE, 'allow'],
    ['a ? wildcard', [{ Effect: 'Allow', Action: 'sqs:SendMessag?', Resource: '*' }], 'sqs:SendMessage', 'arn:aws:sqs:us-east-1:000000000000:q', 'allow'],
    ['an explicit deny over an allow', [allowRead, { Effect: 'Deny', Action: 'dynamodb:*', Resource: TABLE }], 'dynamodb:GetItem', TABLE, 'explicit-deny'],
    ['NotAction', [{ Effect: 'Allow', NotAction: 'dynamodb:DeleteItem', Resource: '*' }], 'dynamodb:DeleteItem', TABLE, 'implicit-deny'],
    ['NotResource', [{ Effect: 'Allow', Action: '*', NotResource: TABLE }], 'dynamodb:GetItem', TABLE, 'implicit-deny'],
  ] as const)('decides %s', (_what, statements, action, resource, expected) => {
    expect(evaluate(statements as unknown as PolicyStatement[], action, resource)).toBe(expected);
  });

  it('reads a condition on the partition keys a batch writes (dynamodb:LeadingKeys): each must match, else the statement does not apply', () => {
    const rollups: PolicyStatement = {
      Effect: 'Allow',
      Action: 'dynamodb:BatchWriteItem',
      Resource: TABLE,
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['R#*'] } },
    };
    expect(evaluate([rollups], 'dynamodb:BatchWriteItem', TABLE, ['R#w#f', 'R#w#g'])).toBe('allow');
    expect(evaluate([rollups], 'dynamodb:BatchWriteItem', TABLE, ['R#w#f', 'TS#w#0'])).toBe('implicit-deny');
    const [access] = dynamoAccesses(CTX, 'BatchWriteItem', {
      RequestItems: { Registry: [{ PutRequest: { Item: { pk: { S: 'R#w#f' } } } }, { DeleteRequest: { Key: { pk: { S: 'S#w' } } } }] },
    });
    expect(access.leadingKeys).toEqual(['R#w#f', 'S#w']);
    expect(evaluate([rollups], access.action, access.resource, access.leadingKeys)).toBe('implicit-deny');
  });

  it('takes a condition it cannot decide the strict way: an Allow as not applying, a Deny as applying', () => {
    const other = { StringEquals: { 'aws:SourceVpc': 'vpc-1' } };
    expect(evaluate([{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: TABLE, Condition: other }], 'dynamodb:GetItem', TABLE)).toBe('implicit-deny');
    expect(evaluate([allowRead, { Effect: 'Deny', Action: 'dynamodb:GetItem', Resource: TABLE, Condition: other }], 'dynamodb:GetItem', TABLE)).toBe(
      'explicit-deny',
    );
    // Leading keys of a request whose keys the check did not read (a Query): undecided.
    const rollups: PolicyStatement = {
      Effect: 'Allow',
      Action: 'dynamodb:Query',
      Resource: TABLE,
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['R#*'] } },
    };
    expect(evaluate([rollups], 'dynamodb:Query', TABLE)).toBe('implicit-deny');
  });

  it('matches resources with case, actions without', () => {
    expect(wildcardMatch('arn:aws:sqs:*:*:Queue', 'arn:aws:sqs:r:a:queue')).toBe(false);
    expect(wildcardMatch('SQS:sendmessage', 'sqs:SendMessage', true)).toBe(true);
    expect(wildcardMatch('a.b', 'aXb')).toBe(false);
  });
});

describe('what a request asks for', () => {
  it('reads the table and index of a DynamoDB request', () => {
    expect(dynamoAccesses(CTX, 'Query', { TableName: 'Registry', IndexName: 'byName' })).toEqual([
      { action: 'dynamodb:Query', resource: `${TABLE}/index/byName`, table: 'Registry', index: 'byName' },
    ]);
  });

  it('authorizes transactions as the item actions inside them, and batches per table', () => {
    const transact = dynamoAccesses(CTX, 'TransactWriteItems', {
      TransactItems: [{ Put: { TableName: 'Registry' } }, { ConditionCheck: { TableName: 'Registry' } }, { Update: { TableName: 'Other' } }],
    });
    const batch = dynamoAccesses(CTX, 'BatchWriteItem', { RequestItems: { Registry: [], Other: [] } });

    expect(transact.map((a) => `${a.action} ${a.table}`)).toEqual([
      'dynamodb:PutItem Registry',
      'dynamodb:ConditionCheckItem Registry',
      'dynamodb:UpdateItem Other',
    ]);
    expect(batch.map((a) => a.resource)).toEqual([TABLE, 'arn:aws:dynamodb:us-east-1:000000000000:table/Other']);
    expect(batch.map((a) => a.leadingKeys)).toEqual([[], []]);
  });

  it('reads the queue of an SQS request and authorizes a batch as its single action', () => {
    expect(sqsAccesses(CTX, 'SendMessageBatch', { QueueUrl: 'http://sqs.us-east-1.localhost:1/000000000000/ingest' })).toEqual([
      { action: 'sqs:SendMessage', resource: 'arn:aws:sqs:us-east-1:000000000000:ingest' },
    ]);
    expect(sqsAccesses(CTX, 'GetQueueUrl', { QueueName: 'forward' })[0].resource).toBe('arn:aws:sqs:us-east-1:000000000000:forward');
  });
});

describe('what a DynamoDB Streams request asks for', () => {
  const ENGINE = 'arn:aws:dynamodb:ddblocal:000000000000:table/Registry/stream/2026-11-22T21:54:27.997';
  const STREAM = 'arn:aws:dynamodb:us-east-1:000000000000:table/Registry/stream/2026-11-22T21:54:27.997';

  it('checks DescribeStream and GetShardIterator on the stream, in the deployment region rather than the engine’s', () => {
    expect(streamsAccesses(CTX, 'DescribeStream', { StreamArn: ENGINE })).toEqual([{ action: 'dynamodb:DescribeStream', resource: STREAM, table: 'Registry' }]);
    expect(streamsAccesses(CTX, 'GetShardIterator', { StreamArn: ENGINE, ShardId: 's' })[0].resource).toBe(STREAM);
  });

  it('reads the stream of GetRecords from DynamoDB Local’s shard iterator, and refuses an iterator it cannot read', () => {
    expect(streamsAccesses(CTX, 'GetRecords', { ShardIterator: `${ENGINE}|001|c2hhcmQ=` })).toEqual([
      { action: 'dynamodb:GetRecords', resource: STREAM, table: 'Registry' },
    ]);
    expect(() => streamsAccesses(CTX, 'GetRecords', { ShardIterator: 'AAAAopaque' })).toThrow(/no stream ARN/);
  });

  it('checks ListStreams on * (no resource-level permissions)', () => {
    expect(streamsAccesses(CTX, 'ListStreams', { TableName: 'Registry' })).toEqual([{ action: 'dynamodb:ListStreams', resource: '*', table: 'Registry' }]);
  });

  it('refuses what is not a stream ARN', () => {
    expect(() => localStreamArn(CTX, TABLE)).toThrow(/not a DynamoDB stream ARN/);
  });
});

describe('unusedGrants', () => {
  it('lists each allowed action and resource no call used, leaving out CloudWatch Logs', () => {
    const roles = {
      Fn: [
        { Effect: 'Allow', Action: ['logs:PutLogEvents'], Resource: '*' },
        { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: [TABLE] },
      ] as PolicyStatement[],
    };
    const calls = [
      { function: 'Fn', action: 'dynamodb:GetItem', resource: TABLE, decision: 'allow' as const },
      { function: 'Other', action: 'dynamodb:PutItem', resource: TABLE, decision: 'allow' as const },
    ];

    expect(unusedGrants(roles, calls)).toEqual([{ function: 'Fn', action: 'dynamodb:PutItem', resource: TABLE }]);
  });
});

describe('what an SES v2 request asks for', () => {
  const identity = 'arn:aws:ses:us-east-1:000000000000:identity/ops.example.com';
  const sendEmail = (from: string) => JSON.stringify({ FromEmailAddress: from, Destination: { ToAddresses: ['a@b.example'] }, Content: {} });
  // The alarm notifier's grant (lib/constructs/alarm-email.ts).
  const grant: PolicyStatement = {
    Effect: 'Allow',
    Action: 'ses:SendEmail',
    Resource: identity,
    Condition: { StringEquals: { 'ses:FromAddress': 'alarms@ops.example.com' } },
  };

  it('reads SendEmail as ses:SendEmail on the From domain’s identity, with ses:FromAddress (a display name left out)', () => {
    expect(sesAccesses(CTX, 'POST', '/v2/email/outbound-emails', sendEmail('Fleetstream <alarms@ops.example.com>'))).toEqual([
      { action: 'ses:SendEmail', resource: identity, context: { 'ses:FromAddress': 'alarms@ops.example.com' } },
    ]);
    expect(sesAccesses(CTX, 'GET', '/v2/email/account', '')).toBeUndefined();
    expect(sesAccesses(CTX, 'POST', '/v2/email/outbound-emails', sendEmail('no-address'))).toBeUndefined();
  });

  it('allows the sender’s grant only from its From address (StringEquals on ses:FromAddress)', () => {
    const [ours] = sesAccesses(CTX, 'POST', '/v2/email/outbound-emails', sendEmail('alarms@ops.example.com'))!;
    const [other] = sesAccesses(CTX, 'POST', '/v2/email/outbound-emails', sendEmail('ceo@ops.example.com'))!;
    expect(evaluate([grant], ours.action, ours.resource, undefined, ours.context)).toBe('allow');
    expect(evaluate([grant], other.action, other.resource, undefined, other.context)).toBe('implicit-deny');
    // A request that does not say its From address: undecided, so not allowed.
    expect(evaluate([grant], ours.action, ours.resource)).toBe('implicit-deny');
  });
});

describe('what an IoT request asks for', () => {
  const ctx = { region: 'us-east-1', account: '000000000000' };

  it('reads a data-plane Publish as iot:Publish on the topic, its path decoded', () => {
    expect(iotDataAccesses(ctx, 'POST', '/topics/j%2Fdn%2Fdev-1?qos=1')).toEqual([
      { action: 'iot:Publish', resource: 'arn:aws:iot:us-east-1:000000000000:topic/j/dn/dev-1' },
    ]);
  });

  it("does not read the data plane's other operations, so the proxy refuses them", () => {
    expect(iotDataAccesses(ctx, 'GET', '/things/dev-1/shadow')).toBeUndefined();
    expect(iotDataAccesses(ctx, 'GET', '/topics/j%2Fdn%2Fdev-1')).toBeUndefined();
  });

  it("reads the control plane's DescribeEndpoint on * and DescribeDomainConfiguration on its ARN", () => {
    expect(iotAccesses(ctx, 'GET', '/endpoint?endpointType=iot%3AData-ATS')).toEqual([{ action: 'iot:DescribeEndpoint', resource: '*' }]);
    expect(iotAccesses(ctx, 'GET', '/domainConfigurations/Fleetstream-devices')).toEqual([
      { action: 'iot:DescribeDomainConfiguration', resource: 'arn:aws:iot:us-east-1:000000000000:domainconfiguration/Fleetstream-devices' },
    ]);
    expect(iotAccesses(ctx, 'DELETE', '/domainConfigurations/Fleetstream-devices')).toBeUndefined();
  });
});

describe('what an S3 request asks for', () => {
  const object = (key: string) => `arn:aws:s3:::fw/${key}`;

  it.each([
    ['GET', '/fw/wks-1/app/1.0?X-Amz-Signature=abc', {}, 's3:GetObject', object('wks-1/app/1.0')],
    ['HEAD', '/fw/wks-1/app/1.0', {}, 's3:GetObject', object('wks-1/app/1.0')],
    ['PUT', '/fw/wks-1/app/1.0?X-Amz-Signature=abc', {}, 's3:PutObject', object('wks-1/app/1.0')],
    ['PUT', '/fw/big?partNumber=2&uploadId=u', {}, 's3:PutObject', object('big')],
    ['POST', '/fw/big?uploads', {}, 's3:PutObject', object('big')],
    ['POST', '/fw/big?uploadId=u', {}, 's3:PutObject', object('big')],
    ['DELETE', '/fw/big?uploadId=u', {}, 's3:AbortMultipartUpload', object('big')],
    ['GET', '/fw/big?uploadId=u', {}, 's3:ListMultipartUploadParts', object('big')],
    ['DELETE', '/fw/a%20b/c', {}, 's3:DeleteObject', object('a b/c')],
    ['GET', '/fw?list-type=2', {}, 's3:ListBucket', 'arn:aws:s3:::fw'],
    ['HEAD', '/fw', {}, 's3:ListBucket', 'arn:aws:s3:::fw'],
    ['PUT', '/fw', {}, 's3:CreateBucket', 'arn:aws:s3:::fw'],
  ])('reads %s %s as S3 authorizes it', (method, url, headers, action, resource) => {
    expect(s3Accesses(method, url, headers, '')).toEqual([{ action, resource }]);
  });

  it('authorizes DeleteObjects as s3:DeleteObject on each key of its body, entities decoded', () => {
    const body = '<Delete><Object><Key>a/1</Key></Object><Object><Key>b&amp;c</Key></Object></Delete>';

    expect(s3Accesses('POST', '/fw?delete', {}, body)).toEqual([
      { action: 's3:DeleteObject', resource: object('a/1') },
      { action: 's3:DeleteObject', resource: object('b&c') },
    ]);
  });

  it('authorizes CopyObject as s3:PutObject on the copy and s3:GetObject on its source', () => {
    expect(s3Accesses('PUT', '/fw/copy', { 'x-amz-copy-source': '/other/src%2Fkey' }, '')).toEqual([
      { action: 's3:PutObject', resource: object('copy') },
      { action: 's3:GetObject', resource: 'arn:aws:s3:::other/src/key' },
    ]);
  });

  it('asks for nothing in a CORS preflight, and cannot read an unknown POST (the proxy refuses it)', () => {
    expect(s3Accesses('OPTIONS', '/fw/wks-1/app/1.0', {}, '')).toEqual([]);
    expect(s3Accesses('POST', '/fw/key?restore', {}, '')).toBeUndefined();
  });
});
