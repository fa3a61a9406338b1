import { COGNITO_LOCAL_TRIGGERS, type CognitoTriggerName, type UserPoolClientSettings, type UserPoolSettings } from '../cognito-local';
import { functionsIn, resourcesOfType, targetOf, type CfnTemplate } from './template';

/**
 * The template's Cognito user pool as the cloud-assembly runtime makes it on cognito-local: the
 * AWS::Cognito::UserPool's settings, its AWS::Cognito::UserPoolClients, and its Lambda triggers.
 * Each property is either given to cognito-local (which honours it, or whose worker checks it:
 * local/cognito-local-worker.mjs), or has no effect on signing in here and is named as such; any
 * other property or value stops the start, so that nothing the template asks for is silently dropped.
 */

/** A trigger of the pool and the function of the template it names. */
export interface UserPoolTriggerSpec {
  name: CognitoTriggerName;
  functionId: string;
}

/** The one user pool of a template, read and checked. */
export interface UserPoolSpec {
  id: string;
  /** CreateUserPool's request, its values unresolved (LambdaConfig is wired through `triggers`). */
  settings: UserPoolSettings;
  /** Its app clients by logical ID, each CreateUserPoolClient's request. */
  clients: Array<{ id: string; settings: UserPoolClientSettings }>;
  triggers: UserPoolTriggerSpec[];
}

// Properties given to cognito-local as CreateUserPool's request names them (CloudFormation's name → the API's).
const POOL_PASSED: Record<string, string> = {
  UserPoolName: 'PoolName',
  UsernameAttributes: 'UsernameAttributes',
  AliasAttributes: 'AliasAttributes',
  AutoVerifiedAttributes: 'AutoVerifiedAttributes',
  Policies: 'Policies',
  AdminCreateUserConfig: 'AdminCreateUserConfig',
  AccountRecoverySetting: 'AccountRecoverySetting',
  Schema: 'Schema',
  MfaConfiguration: 'MfaConfiguration',
  UsernameConfiguration: 'UsernameConfiguration',
  EmailVerificationMessage: 'EmailVerificationMessage',
  EmailVerificationSubject: 'EmailVerificationSubject',
  SmsVerificationMessage: 'SmsVerificationMessage',
  SmsAuthenticationMessage: 'SmsAuthenticationMessage',
  VerificationMessageTemplate: 'VerificationMessageTemplate',
};
// Properties with no part in signing in here: deploy protection, billing tier, delivery of e-mail
// and SMS (the local pool's messages go to its outbox), tags, and which MFA kinds a user may turn on.
const POOL_IGNORED = new Set([
  'DeletionProtection',
  'UserPoolTier',
  'UserPoolTags',
  'EmailConfiguration',
  'SmsConfiguration',
  'EnabledMfas',
  'UserPoolAddOns',
  'DeviceConfiguration',
  'UserAttributeUpdateSettings',
]);

const CLIENT_PASSED = new Set([
  'ClientName',
  'GenerateSecret',
  'ExplicitAuthFlows',
  'AccessTokenValidity',
  'IdTokenValidity',
  'RefreshTokenValidity',
  'TokenValidityUnits',
  'EnableTokenRevocation',
  'PreventUserExistenceErrors',
  'ReadAttributes',
  'WriteAttributes',
  // The hosted UI's OAuth settings: stored, but no hosted UI runs here (the console signs in over the JSON API).
  'AllowedOAuthFlows',
  'AllowedOAuthFlowsUserPoolClient',
  'AllowedOAuthScopes',
  'CallbackURLs',
  'LogoutURLs',
  'DefaultRedirectURI',
  'SupportedIdentityProviders',
]);
const CLIENT_IGNORED = new Set(['UserPoolId', 'AnalyticsConfiguration', 'AuthSessionValidity', 'EnablePropagateAdditionalUserContextData']);

/**
 * The template's user pool, its clients and triggers; undefined when it has none.
 * @throws Error for what cognito-local cannot honour: several pools, another AWS::Cognito resource,
 * an unknown property, alias sign-in, required MFA, passwordless sign-in, a client with a secret, a
 * trigger cognito-local does not call, a trigger naming no function of the template
 */
export const userPoolOf = (template: CfnTemplate, stackName: string): UserPoolSpec | undefined => {
  const others = Object.entries(template.Resources).filter(
    ([, r]) => r.Type.startsWith('AWS::Cognito::') && r.Type !== 'AWS::Cognito::UserPool' && r.Type !== 'AWS::Cognito::UserPoolClient',
  );
  if (others.length)
    throw new Error(
      `${others.map(([id, r]) => `${id} (${r.Type})`).join(', ')}: does not run here (the cloud-assembly runtime makes user pools and their clients only).`,
    );
  const pools = resourcesOfType(template, 'AWS::Cognito::UserPool');
  if (!pools.length) return undefined;
  if (pools.length > 1) throw new Error(`The template has ${pools.length} user pools; the cloud-assembly runtime runs one.`);
  const [id, pool] = pools[0];
  const props = pool.Properties ?? {};
  const refuse = (what: string) => {
    throw new Error(`User pool ${id}: ${what} does not run here (cognito-local).`);
  };
  const settings: UserPoolSettings = { PoolName: `${stackName}-${id}` };
  for (const [key, value] of Object.entries(props)) {
    if (key === 'LambdaConfig' || POOL_IGNORED.has(key)) continue;
    if (!(key in POOL_PASSED)) refuse(`property ${key}`);
    settings[POOL_PASSED[key]] = value;
  }
  if (props.AliasAttributes?.length) refuse(`AliasAttributes ${JSON.stringify(props.AliasAttributes)}`);
  if (props.MfaConfiguration === 'ON') refuse('required MFA (MfaConfiguration ON)');
  const firstFactors = props.Policies?.SignInPolicy?.AllowedFirstAuthFactors;
  if (firstFactors && JSON.stringify(firstFactors) !== '["PASSWORD"]') refuse(`sign-in with ${JSON.stringify(firstFactors)}`);

  const triggers: UserPoolTriggerSpec[] = [];
  const lambdaConfig: Record<string, any> = { ...props.LambdaConfig };
  // PreTokenGenerationConfig names the same function as PreTokenGeneration; its V1_0 event is the one cognito-local sends.
  const preToken = lambdaConfig.PreTokenGenerationConfig;
  if (preToken) {
    if (preToken.LambdaVersion && preToken.LambdaVersion !== 'V1_0') refuse(`a ${preToken.LambdaVersion} pre token generation trigger`);
    lambdaConfig.PreTokenGeneration ??= preToken.LambdaArn;
    delete lambdaConfig.PreTokenGenerationConfig;
  }
  for (const [name, arn] of Object.entries(lambdaConfig)) {
    if (!(COGNITO_LOCAL_TRIGGERS as readonly string[]).includes(name)) refuse(`the ${name} trigger (cognito-local calls ${COGNITO_LOCAL_TRIGGERS.join(', ')})`);
    const [functionId] = functionsIn(template, arn);
    if (!functionId) throw new Error(`User pool ${id}: its ${name} trigger names no function of the template.`);
    triggers.push({ name: name as CognitoTriggerName, functionId });
  }

  const clients = resourcesOfType(template, 'AWS::Cognito::UserPoolClient').map(([clientId, client]) => {
    const clientProps = client.Properties ?? {};
    if (targetOf(clientProps.UserPoolId) !== id) throw new Error(`User pool client ${clientId}: its UserPoolId is not the template's pool ${id}.`);
    const clientSettings: UserPoolClientSettings = { ClientName: `${stackName}-${clientId}` };
    for (const [key, value] of Object.entries(clientProps)) {
      if (CLIENT_IGNORED.has(key)) continue;
      if (!CLIENT_PASSED.has(key)) throw new Error(`User pool client ${clientId}: property ${key} does not run here (cognito-local).`);
      clientSettings[key] = value;
    }
    // cognito-local makes a secret but never asks for SECRET_HASH: a call Cognito refuses would pass.
    if (clientProps.GenerateSecret === true)
      throw new Error(`User pool client ${clientId}: a client secret (GenerateSecret) does not run here (cognito-local does not check SECRET_HASH).`);
    return { id: clientId, settings: clientSettings };
  });
  return { id, settings, clients, triggers };
};
