import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Source } from 'aws-cdk-lib/aws-s3-deployment';
import { CONSOLE_PLACEHOLDER_DIR } from '../../lib/constructs/console-site';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { mentions, targetOf } from './template-queries';

// Handler bundling is skipped (the console's pieces are what is looked at), and the console's build
// is the placeholder page: synthesis takes a few seconds.
let stack: FleetstreamStack;
let template: Template;
let resources: Record<string, { Type: string; Properties: Record<string, any> }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
/** The response headers policy the distribution's default behaviour names. */
const DISTRIBUTION_POLICY = () => resources[idOf(stack.consoleSite.distribution)].Properties.DistributionConfig.DefaultCacheBehavior.ResponseHeadersPolicyId;

beforeAll(() => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node), consoleSource: Source.asset(CONSOLE_PLACEHOLDER_DIR) });
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
});

describe('console users (Cognito)', () => {
  it('lets people sign up with an e-mail address verified by a code, with a length-first password policy and recovery by e-mail', () => {
    template.hasResourceProperties('AWS::Cognito::UserPool', {
      UsernameAttributes: ['email'],
      AutoVerifiedAttributes: ['email'],
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: false },
      VerificationMessageTemplate: { DefaultEmailOption: 'CONFIRM_WITH_CODE' },
      Policies: { PasswordPolicy: { MinimumLength: 12, RequireLowercase: true, RequireUppercase: true, RequireNumbers: true, RequireSymbols: false } },
      AccountRecoverySetting: { RecoveryMechanisms: [{ Name: 'verified_email', Priority: 1 }] },
      DeletionProtection: 'ACTIVE',
    });
    expect(resources[idOf(stack.users.userPool)]).toMatchObject({ DeletionPolicy: 'Retain' });
  });

  it('runs the sign-up trigger on PostConfirmation and PostAuthentication, and lets Cognito invoke it', () => {
    const triggerId = idOf(stack.users.trigger);
    const { LambdaConfig } = resources[idOf(stack.users.userPool)].Properties;
    expect(targetOf(LambdaConfig.PostConfirmation)).toBe(triggerId);
    expect(targetOf(LambdaConfig.PostAuthentication)).toBe(triggerId);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [triggerId, 'Arn'] },
      Principal: 'cognito-idp.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [idOf(stack.users.userPool), 'Arn'] },
    });
    expect(resources[triggerId].Properties.Environment.Variables.REGISTRY_TABLE).toEqual({ Ref: idOf(stack.registry.table) });
  });

  it('has a public app client for the console: no secret, USER_PASSWORD_AUTH and refresh, revocable tokens', () => {
    template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      ExplicitAuthFlows: Match.arrayEquals(['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH']),
      PreventUserExistenceErrors: 'ENABLED',
      EnableTokenRevocation: true,
      AccessTokenValidity: 60,
    });
  });

  it('tells the API authorizer which pool and client to accept tokens of', () => {
    const variables = resources[idOf(stack.authorizerFunctions.get('api-key')!)].Properties.Environment.Variables;
    expect(variables.USER_POOL_ID).toEqual({ Ref: idOf(stack.users.userPool) });
    expect(variables.USER_POOL_CLIENT_ID).toEqual({ Ref: idOf(stack.users.client) });
  });
});

describe('console site (S3 + CloudFront)', () => {
  it('keeps the bucket private: public access blocked, TLS only, encrypted, owner-enforced', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
    });
    const policy = Object.values(template.findResources('AWS::S3::BucketPolicy')).find((p) => mentions(p.Properties.Bucket, idOf(stack.consoleSite.bucket)))!;
    const statements = policy.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    // The only reader: this distribution, through origin access control.
    const reads = statements.filter((s: any) => s.Effect === 'Allow');
    expect(reads).toEqual([expect.objectContaining({ Principal: { Service: 'cloudfront.amazonaws.com' }, Action: 's3:GetObject' })]);
    expect(mentions(reads[0].Condition, idOf(stack.consoleSite.distribution))).toBe(true);
  });

  it('serves the single-page app over HTTPS with index.html as root and for the app’s own routes, and security headers', () => {
    const { DistributionConfig } = resources[idOf(stack.consoleSite.distribution)].Properties;
    expect(DistributionConfig).toMatchObject({
      DefaultRootObject: 'index.html',
      DefaultCacheBehavior: { ViewerProtocolPolicy: 'redirect-to-https', AllowedMethods: ['GET', 'HEAD'], Compress: true },
      CustomErrorResponses: [
        { ErrorCode: 403, ResponseCode: 200, ResponsePagePath: '/index.html', ErrorCachingMinTTL: 0 },
        { ErrorCode: 404, ResponseCode: 200, ResponsePagePath: '/index.html', ErrorCachingMinTTL: 0 },
      ],
    });
    expect(DistributionConfig.Origins[0].OriginAccessControlId).toBeDefined();
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: {
        SecurityHeadersConfig: {
          StrictTransportSecurity: Match.objectLike({ AccessControlMaxAgeSec: 31_536_000 }),
          ContentTypeOptions: { Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ReferrerPolicy: { ReferrerPolicy: 'strict-origin-when-cross-origin', Override: true },
        },
      },
    });
  });

  it('sends a strict Content-Security-Policy whose connect-src names the API, the user pool’s Cognito, the region’s S3 (firmware uploads) and the live updates’ WebSocket, nothing else', () => {
    const policy = resources[idOf(stack.consoleSite.securityHeaders)].Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    // The policy's text with CloudFormation's references written out: {Ref} and {Resource.Attribute}.
    const text = (value: unknown): string => {
      if (typeof value === 'string') return value;
      const v = value as Record<string, any>;
      if (v['Fn::Join']) return (v['Fn::Join'][1] as unknown[]).map(text).join(v['Fn::Join'][0]);
      if (v.Ref) return `{${v.Ref}}`;
      if (v['Fn::GetAtt']) return `{${v['Fn::GetAtt'].join('.')}}`;
      throw new Error(`unexpected ${JSON.stringify(value)}`);
    };

    expect(policy.ContentSecurityPolicy.Override).toBe(true);
    expect(text(policy.ContentSecurityPolicy.ContentSecurityPolicy).split('; ')).toEqual([
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "font-src 'self'",
      `connect-src 'self' https://{${idOf(stack.api.restApi)}}.execute-api.{AWS::Region}.{AWS::URLSuffix} https://cognito-idp.{AWS::Region}.amazonaws.com https://*.s3.{AWS::Region}.{AWS::URLSuffix} wss://{${stack.getLogicalId(stack.consoleLive.node.findChild('Endpoints').node.defaultChild as never)}.DomainName}`,
      "manifest-src 'self'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
    ]);
    expect(DISTRIBUTION_POLICY()).toEqual({ Ref: idOf(stack.consoleSite.securityHeaders) });
  });

  it('writes config.json at deploy from the stack’s API address, region, pool and client (not baked into the build)', () => {
    const deployments = Object.values(template.findResources('Custom::CDKBucketDeployment'));
    const config = deployments.find((d) => JSON.stringify(d.Properties.SourceMarkers ?? '').includes('UserPool'));
    expect(config).toBeDefined();
    const markers = JSON.stringify(config!.Properties.SourceMarkers);
    for (const id of [idOf(stack.api.restApi), idOf(stack.users.userPool), idOf(stack.users.client)]) expect(markers).toContain(id);
    expect(config!.Properties).toMatchObject({
      Prune: false,
      SystemMetadata: { 'cache-control': 'no-cache', 'content-type': 'application/json' },
      DistributionPaths: ['/config.json'],
    });
  });

  it('copies the build without pruning config.json: hashed assets cached for a year, the pages revalidated', () => {
    const deployments = Object.values(template.findResources('Custom::CDKBucketDeployment')).map((d) => d.Properties);
    expect(deployments).toContainEqual(
      expect.objectContaining({
        Prune: false,
        Include: ['assets/*'],
        Exclude: ['*'],
        SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
      }),
    );
    expect(deployments).toContainEqual(
      expect.objectContaining({
        Prune: false,
        Exclude: ['assets/*', 'config.json'],
        SystemMetadata: { 'cache-control': 'no-cache' },
        DistributionPaths: ['/*'],
      }),
    );
  });

  it('gives the console’s URL, the user pool and its client as outputs', () => {
    const outputs = template.toJSON().Outputs;
    expect(mentions(outputs.ConsoleUrl.Value, idOf(stack.consoleSite.distribution))).toBe(true);
    expect(outputs.UserPoolId.Value).toEqual({ Ref: idOf(stack.users.userPool) });
    expect(outputs.UserPoolClientId.Value).toEqual({ Ref: idOf(stack.users.client) });
  });
});
