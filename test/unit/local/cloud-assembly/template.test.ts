import { resolver, UnresolvableError, type Physical, type Pseudo } from '../../../../local/cloud-assembly/template';

const PSEUDO: Pseudo = {
  'AWS::AccountId': '000000000000',
  'AWS::Region': 'us-east-1',
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'Fleetstream',
  'AWS::StackId': 'arn:aws:cloudformation:us-east-1:000000000000:stack/Fleetstream/local',
};
const PHYSICAL: Record<string, Physical> = {
  Table: { ref: 'Fleetstream-Table', attributes: { Arn: 'arn:aws:dynamodb:us-east-1:000000000000:table/Fleetstream-Table' } },
  Api: { ref: 'local', attributes: {} },
};
const resolve = resolver((id) => PHYSICAL[id], PSEUDO, { SharedTopic: 'arn:aws:sns:us-east-1:000000000000:t' });

describe('resolver', () => {
  it('resolves Ref, Fn::GetAtt in both forms, and pseudo parameters', () => {
    expect(resolve({ Ref: 'Table' })).toBe('Fleetstream-Table');
    expect(resolve({ 'Fn::GetAtt': ['Table', 'Arn'] })).toBe(PHYSICAL.Table.attributes.Arn);
    expect(resolve({ 'Fn::GetAtt': 'Table.Arn' })).toBe(PHYSICAL.Table.attributes.Arn);
    expect(resolve({ Ref: 'AWS::Region' })).toBe('us-east-1');
  });

  it('resolves Fn::Join, Fn::Sub (with and without variables), Fn::Select, Fn::Split and Fn::ImportValue inside objects and lists', () => {
    const value = {
      url: { 'Fn::Join': ['', ['https://', { Ref: 'Api' }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/v3']] },
      bucket: { 'Fn::Sub': 'assets-${AWS::AccountId}-${AWS::Region}-${Table}-${Table.Arn}' },
      named: { 'Fn::Sub': ['${Name}/x', { Name: { Ref: 'Table' } }] },
      service: { 'Fn::Select': [2, { 'Fn::Split': [':', { 'Fn::GetAtt': ['Table', 'Arn'] }] }] },
      imported: [{ 'Fn::ImportValue': 'SharedTopic' }, { Ref: 'AWS::NoValue' }],
      gone: { Ref: 'AWS::NoValue' },
    };

    expect(resolve(value)).toEqual({
      url: 'https://local.execute-api.us-east-1.amazonaws.com/v3',
      bucket: `assets-000000000000-us-east-1-Fleetstream-Table-${PHYSICAL.Table.attributes.Arn}`,
      named: 'Fleetstream-Table/x',
      service: 'dynamodb',
      imported: ['arn:aws:sns:us-east-1:000000000000:t'],
    });
  });

  it('names what it cannot resolve: an unknown resource, attribute, export or function', () => {
    expect(() => resolve({ Ref: 'Missing' })).toThrow(new UnresolvableError('Ref Missing: no such resource or parameter runs here'));
    expect(() => resolve({ 'Fn::GetAtt': ['Table', 'StreamArn'] })).toThrow(/Table\.StreamArn: no such attribute/);
    expect(() => resolve({ 'Fn::ImportValue': 'Nope' })).toThrow(/no such export/);
    expect(() => resolve({ 'Fn::If': ['c', 1, 2] })).toThrow(/Fn::If is not supported/);
  });
});
