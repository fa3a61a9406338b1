import { userPoolOf } from '../../../../local/cloud-assembly/cognito';
import type { CfnTemplate } from '../../../../local/cloud-assembly/template';

/** A template with the stack's kind of pool: e-mail names, a policy, two triggers on one function, a public client. */
const template = (change: (t: CfnTemplate) => void = () => undefined): CfnTemplate => {
  const t: CfnTemplate = {
    Resources: {
      Trigger: { Type: 'AWS::Lambda::Function', Properties: {} },
      Pool: {
        Type: 'AWS::Cognito::UserPool',
        Properties: {
          UsernameAttributes: ['email'],
          AutoVerifiedAttributes: ['email'],
          Policies: { PasswordPolicy: { MinimumLength: 12, RequireLowercase: true, RequireUppercase: true, RequireNumbers: true, RequireSymbols: false } },
          LambdaConfig: { PostConfirmation: { 'Fn::GetAtt': ['Trigger', 'Arn'] }, PostAuthentication: { 'Fn::GetAtt': ['Trigger', 'Arn'] } },
          MfaConfiguration: 'OPTIONAL',
          EnabledMfas: ['SOFTWARE_TOKEN_MFA'],
          DeletionProtection: 'ACTIVE',
        },
      },
      Client: {
        Type: 'AWS::Cognito::UserPoolClient',
        Properties: {
          UserPoolId: { Ref: 'Pool' },
          ClientName: 'console',
          GenerateSecret: false,
          ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
        },
      },
    },
  };
  change(t);
  return t;
};
const pool = (t: CfnTemplate) => t.Resources.Pool.Properties!;

describe('userPoolOf', () => {
  it('reads the pool’s settings by the API’s names, its clients and its triggers, and passes over what has no part in signing in', () => {
    expect(userPoolOf(template(), 'Fleetstream')).toEqual({
      id: 'Pool',
      settings: {
        PoolName: 'Fleetstream-Pool',
        UsernameAttributes: ['email'],
        AutoVerifiedAttributes: ['email'],
        Policies: pool(template()).Policies,
        MfaConfiguration: 'OPTIONAL',
      },
      clients: [
        {
          id: 'Client',
          settings: { ClientName: 'console', GenerateSecret: false, ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'] },
        },
      ],
      triggers: [
        { name: 'PostConfirmation', functionId: 'Trigger' },
        { name: 'PostAuthentication', functionId: 'Trigger' },
      ],
    });
  });

  it('answers undefined for a template without a pool', () => {
    expect(userPoolOf({ Resources: {} }, 'Fleetstream')).toBeUndefined();
  });

  it('takes a V1_0 PreTokenGenerationConfig as the PreTokenGeneration trigger', () => {
    const t = template(
      (x) => (pool(x).LambdaConfig = { PreTokenGenerationConfig: { LambdaArn: { 'Fn::GetAtt': ['Trigger', 'Arn'] }, LambdaVersion: 'V1_0' } }),
    );

    expect(userPoolOf(t, 'Fleetstream')!.triggers).toEqual([{ name: 'PreTokenGeneration', functionId: 'Trigger' }]);
  });

  it.each<[string, (t: CfnTemplate) => void, RegExp]>([
    ['an unknown pool property', (t) => (pool(t).SomethingNew = true), /User pool Pool: property SomethingNew does not run here/],
    ['alias sign-in', (t) => (pool(t).AliasAttributes = ['preferred_username']), /AliasAttributes \["preferred_username"\] does not run here/],
    ['required MFA', (t) => (pool(t).MfaConfiguration = 'ON'), /required MFA/],
    [
      'passwordless first factors',
      (t) => (pool(t).Policies.SignInPolicy = { AllowedFirstAuthFactors: ['PASSWORD', 'EMAIL_OTP'] }),
      /sign-in with \["PASSWORD","EMAIL_OTP"\]/,
    ],
    [
      'a trigger cognito-local never calls',
      (t) => (pool(t).LambdaConfig.DefineAuthChallenge = { 'Fn::GetAtt': ['Trigger', 'Arn'] }),
      /the DefineAuthChallenge trigger/,
    ],
    [
      'a V2_0 pre token generation trigger',
      (t) => (pool(t).LambdaConfig = { PreTokenGenerationConfig: { LambdaArn: 'arn:x', LambdaVersion: 'V2_0' } }),
      /a V2_0 pre token generation trigger/,
    ],
    [
      'a trigger naming no function of the template',
      (t) => (pool(t).LambdaConfig.PostConfirmation = 'arn:aws:lambda:us-east-1:1:function:elsewhere'),
      /PostConfirmation trigger names no function of the template/,
    ],
    ['a client secret', (t) => (t.Resources.Client.Properties!.GenerateSecret = true), /Client: a client secret \(GenerateSecret\) does not run here/],
    ['an unknown client property', (t) => (t.Resources.Client.Properties!.Brand = 'x'), /Client: property Brand does not run here/],
    [
      'a client of another pool',
      (t) => (t.Resources.Client.Properties!.UserPoolId = 'us-east-1_elsewhere'),
      /Client: its UserPoolId is not the template's pool Pool/,
    ],
    ['a second pool', (t) => (t.Resources.Other = { Type: 'AWS::Cognito::UserPool', Properties: {} }), /2 user pools/],
    [
      'another Cognito resource',
      (t) => (t.Resources.Admins = { Type: 'AWS::Cognito::UserPoolGroup', Properties: {} }),
      /Admins \(AWS::Cognito::UserPoolGroup\): does not run here/,
    ],
  ])('refuses %s', (_what, change, message) => {
    expect(() => userPoolOf(template(change), 'Fleetstream')).toThrow(message);
  });
});
