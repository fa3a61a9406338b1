import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { HandlerFunction, TABLE_ACTIONS } from '../../lib/constructs/handler-function';
import { actionsOf, statementsOfFunction } from './template-queries';

// These tests are about permissions and settings: skip esbuild.
const setup = () => {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'FnTest');
  const fn = new HandlerFunction(stack, 'Fn', { source: 'workspaces' });
  const statements = () => statementsOfFunction(Template.fromStack(stack), stack.getLogicalId(fn.node.defaultChild as never));
  return { stack, fn, statements };
};

describe('HandlerFunction', () => {
  it('bundles lambdas/<source>/handler.ts and defaults to 512 MB and 10 s', () => {
    const { stack, fn } = setup();
    expect(fn.source).toBe('workspaces');
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', { MemorySize: 512, Timeout: 10, Handler: 'index.handler' });
  });

  it('bindTable get-item grants GetItem alone and names the table in the variable', () => {
    const { stack, fn, statements } = setup();
    const table = new Table(stack, 'T', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
    fn.bindTable(table, 'SOME_TABLE', 'get-item');
    expect(
      statements()
        .filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')))
        .flatMap(actionsOf),
    ).toEqual(['dynamodb:GetItem']);
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { SOME_TABLE: { Ref: stack.getLogicalId(table.node.defaultChild as never) } } },
    });
  });

  it('bindTable get-update grants GetItem and UpdateItem alone', () => {
    const { stack, fn, statements } = setup();
    fn.bindTable(new Table(stack, 'T', { partitionKey: { name: 'pk', type: AttributeType.STRING } }), 'SOME_TABLE', 'get-update');
    expect(
      statements()
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('dynamodb:')),
    ).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
  });

  it('bindTable read-write grants the item actions a transaction needs and nothing table-wide', () => {
    const { stack, fn, statements } = setup();
    fn.bindTable(new Table(stack, 'T', { partitionKey: { name: 'pk', type: AttributeType.STRING } }), 'SOME_TABLE', 'read-write');
    const actions = statements()
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('dynamodb:'));
    expect(actions.sort()).toEqual([...TABLE_ACTIONS['read-write']].sort());
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem']));
  });

  it('bindQueue send grants sending only and names the queue URL in the variable', () => {
    const { stack, fn, statements } = setup();
    const queue = new Queue(stack, 'Q');
    fn.bindQueue(queue, 'SOME_QUEUE_URL', 'send');
    const actions = statements()
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('sqs:'));
    expect(actions).toContain('sqs:SendMessage');
    expect(actions).not.toContain('sqs:ReceiveMessage');
    expect(actions).not.toContain('sqs:DeleteMessage');
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { SOME_QUEUE_URL: { Ref: stack.getLogicalId(queue.node.defaultChild as never) } } },
    });
  });

  it('bindQueue consume grants receive, delete and visibility changes, and the queue key', () => {
    const { stack, fn, statements } = setup();
    fn.bindQueue(new Queue(stack, 'Q', { encryption: QueueEncryption.KMS }), 'SOME_QUEUE_URL', 'consume');
    const actions = statements().flatMap(actionsOf);
    expect(actions).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'kms:Decrypt']));
    expect(actions).not.toContain('sqs:SendMessage');
  });
});
