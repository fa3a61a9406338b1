import { wildcardMatch, type PolicyStatement } from './iam';
import { ACCOUNT, type RunContext } from './run-context';
import { resourcesOfType, targetOf, type CfnResource } from './template';

/** Whether a service principal may invoke a function for a source ARN, as the template's AWS::Lambda::Permissions say. */
export type MayInvoke = (fnId: string, sourceArn: string, principal?: string) => boolean;

/** The template's IAM, as the proxies and the services here read it. */
export interface Permissions {
  /** A function's role statements, resolved. */
  statementsOf: (fn: CfnResource) => PolicyStatement[];
  /** A role's statements, inline and attached, resolved. */
  statementsOfRole: (roleId: string | undefined) => PolicyStatement[];
  mayInvoke: MayInvoke;
}

/** Reads the roles' policies and the functions' resource policies (AWS::Lambda::Permission, resolved now). */
export const readPermissions = ({ template, physical, resolve }: RunContext): Permissions => {
  const policies = resourcesOfType(template, 'AWS::IAM::Policy');
  const statementsOf = (fn: CfnResource): PolicyStatement[] => statementsOfRole(targetOf(fn.Properties?.Role));
  const statementsOfRole = (roleId: string | undefined): PolicyStatement[] => {
    if (!roleId) return [];
    const role = template.Resources[roleId];
    const inline = (role?.Properties?.Policies ?? []).flatMap((p: { PolicyDocument: { Statement: unknown[] } }) => p.PolicyDocument.Statement);
    const attached = policies
      .filter(([, p]) => (p.Properties?.Roles ?? []).some((r: unknown) => targetOf(r) === roleId))
      .flatMap(([, p]) => p.Properties!.PolicyDocument.Statement);
    return resolve([...inline, ...attached]) as PolicyStatement[];
  };

  const permissions = resourcesOfType(template, 'AWS::Lambda::Permission').map(
    ([, p]) => resolve(p.Properties) as { FunctionName: string; Principal: string; SourceArn?: string; SourceAccount?: string; Action: string },
  );
  const mayInvoke = (fnId: string, sourceArn: string, principal = 'apigateway.amazonaws.com') =>
    permissions.some(
      (p) =>
        [fnId, physical.get(fnId)!.attributes.Arn].includes(p.FunctionName) &&
        p.Principal === principal &&
        wildcardMatch(p.Action, 'lambda:InvokeFunction', true) &&
        (!p.SourceArn || wildcardMatch(p.SourceArn, sourceArn)) &&
        (!p.SourceAccount || p.SourceAccount === ACCOUNT),
    );
  return { statementsOf, statementsOfRole, mayInvoke };
};
