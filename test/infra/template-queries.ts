import type { Template } from 'aws-cdk-lib/assertions';

/** A resource of a synthesized template. */
export interface CfnResource {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}

type Resources = Record<string, CfnResource>;

const resourcesOf = (template: Template): Resources => template.toJSON().Resources;

/** The logical ID a `Ref` or `Fn::GetAtt` points at. */
export const targetOf = (ref: any): string | undefined => ref?.Ref ?? ref?.['Fn::GetAtt']?.[0];

/** Each API Gateway resource's full path (`/workspaces/{workspaceId}`), by logical ID. */
export const resourcePaths = (template: Template): Map<string, string> => {
  const resources = Object.entries(resourcesOf(template)).filter(([, r]) => r.Type === 'AWS::ApiGateway::Resource');
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known) return known;
    const { ParentId, PathPart } = resources.find(([rid]) => rid === id)![1].Properties;
    // The root's children point at RestApi.RootResourceId.
    const parent = ParentId['Fn::GetAtt'] ? '' : pathOf(targetOf(ParentId)!);
    const path = `${parent}/${PathPart}`;
    paths.set(id, path);
    return path;
  };
  for (const [id] of resources) pathOf(id);
  return paths;
};

/** Every API Gateway method as `METHOD /path`, with its properties. */
export const methodsByRoute = (template: Template): Map<string, Record<string, any>> => {
  const paths = resourcePaths(template);
  const methods = new Map<string, Record<string, any>>();
  for (const resource of Object.values(resourcesOf(template))) {
    if (resource.Type !== 'AWS::ApiGateway::Method') continue;
    const props = resource.Properties;
    const path = props.ResourceId['Fn::GetAtt'] ? '/' : paths.get(targetOf(props.ResourceId)!);
    const key = `${props.HttpMethod} ${path}`;
    if (methods.has(key)) throw new Error(`Two methods for ${key}`);
    methods.set(key, props);
  }
  return methods;
};

/** The policy statements attached to a Lambda function's execution role. */
export const statementsOfFunction = (template: Template, functionId: string): any[] => {
  const resources = resourcesOf(template);
  const roleId = targetOf(resources[functionId].Properties.Role)!;
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: any) => targetOf(role) === roleId))
    .flatMap((r) => r.Properties.PolicyDocument.Statement);
};

/** The statement's actions as a list. */
export const actionsOf = (statement: any): string[] => [statement.Action].flat();

/** Whether a CloudFormation value (an ARN built with Fn::Join, say) mentions a logical ID. */
export const mentions = (value: unknown, logicalId: string) => JSON.stringify(value).includes(`"${logicalId}"`);
