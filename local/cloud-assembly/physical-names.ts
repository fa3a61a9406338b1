import { ACCOUNT, API_ID, type RunContext } from './run-context';
import { resourcesOfType, targetOf, type CfnResource } from './template';

/** The resources named before anything runs: the functions that serve, and the API's stages. */
export interface NamedResources {
  /** The template's functions, less the deploy-time ones. */
  functions: Array<[string, CfnResource]>;
  stages: Array<[string, CfnResource]>;
}

/**
 * Names the functions, roles, log groups, the API, the Timestream tables, the rules and IoT Core's
 * resources now; the functions' environments are resolved once the gateway's port is known.
 */
export const nameResources = ({ template, region, physical, resolve, nameOf }: RunContext): NamedResources => {
  // Deploy-time functions have no part in serving and nothing here calls them: BucketDeployment's
  // (Python) copies the console's files and config.json into its bucket during a deploy.
  const deployOnly = new Set(resourcesOfType(template, 'Custom::CDKBucketDeployment').map(([, r]) => targetOf(r.Properties?.ServiceToken)));
  const functions = resourcesOfType(template, 'AWS::Lambda::Function').filter(([id]) => !deployOnly.has(id));
  for (const [id] of functions) physical.set(id, { ref: id, attributes: { Arn: `arn:aws:lambda:${region}:${ACCOUNT}:function:${id}` } });
  for (const [id] of resourcesOfType(template, 'AWS::IAM::Role'))
    physical.set(id, { ref: id, attributes: { Arn: `arn:aws:iam::${ACCOUNT}:role/${id}`, RoleId: id } });
  for (const [id, group] of resourcesOfType(template, 'AWS::Logs::LogGroup')) {
    const name = nameOf(id, group.Properties?.LogGroupName);
    physical.set(id, { ref: name, attributes: { Arn: `arn:aws:logs:${region}:${ACCOUNT}:log-group:${name}:*` } });
  }
  const [restApis, stages] = [resourcesOfType(template, 'AWS::ApiGateway::RestApi'), resourcesOfType(template, 'AWS::ApiGateway::Stage')];
  for (const [id] of restApis) physical.set(id, { ref: API_ID, attributes: { RootResourceId: 'root' } });
  for (const [id, stage] of stages) physical.set(id, { ref: stage.Properties!.StageName, attributes: {} });
  for (const [id] of resourcesOfType(template, 'AWS::ApiGateway::Authorizer')) physical.set(id, { ref: id, attributes: { AuthorizerId: id } });
  for (const [id, db] of resourcesOfType(template, 'AWS::Timestream::Database'))
    physical.set(id, {
      ref: nameOf(id, db.Properties?.DatabaseName),
      attributes: { Arn: `arn:aws:timestream:${region}:${ACCOUNT}:database/${nameOf(id, db.Properties?.DatabaseName)}` },
    });
  for (const [id, table] of resourcesOfType(template, 'AWS::Timestream::Table')) {
    const database = resolve(table.Properties?.DatabaseName);
    const name = nameOf(id, table.Properties?.TableName);
    physical.set(id, {
      ref: `${database}|${name}`,
      attributes: { Name: name, Arn: `arn:aws:timestream:${region}:${ACCOUNT}:database/${database}/table/${name}` },
    });
  }
  for (const [id, rule] of resourcesOfType(template, 'AWS::Events::Rule')) {
    const name = nameOf(id, rule.Properties?.Name);
    physical.set(id, { ref: name, attributes: { Arn: `arn:aws:events:${region}:${ACCOUNT}:rule/${name}` } });
  }
  // IoT Core's resources are named by their name property, and their ARNs are of IoT's shape.
  for (const [type, nameKey, kind] of [
    ['AWS::IoT::Authorizer', 'AuthorizerName', 'authorizer'],
    ['AWS::IoT::DomainConfiguration', 'DomainConfigurationName', 'domainconfiguration'],
    ['AWS::IoT::TopicRule', 'RuleName', 'rule'],
  ]) {
    for (const [id, resource] of resourcesOfType(template, type)) {
      const name = nameOf(id, resolve(resource.Properties?.[nameKey]));
      physical.set(id, { ref: name, attributes: { Arn: `arn:aws:iot:${region}:${ACCOUNT}:${kind}/${name}` } });
    }
  }
  return { functions, stages };
};
