import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccountRecovery, Mfa, UserPool, type UserPoolClient, VerificationEmailStyle } from 'aws-cdk-lib/aws-cognito';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { HandlerFunction } from './handler-function';

export interface ConsoleUsersProps {
  /** The registry, where the sign-up trigger writes the user's account, workspace and fleet. */
  readonly registry: ITable;
  /** The variable the trigger reads the registry's name from. */
  readonly registryEnv: string;
  /** Of the user pool (it holds the users: RETAIN unless the stack says destroy). */
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention?: RetentionDays;
  readonly logRemovalPolicy?: RemovalPolicy;
}

/**
 * The console's users (DESIGN §10): a Cognito user pool with self sign-up verified by an e-mailed
 * code, sign-in by e-mail address, recovery by e-mail, and the console's public app client
 * (no secret: a browser cannot keep one; USER_PASSWORD_AUTH and refresh tokens). Its
 * PostConfirmation and PostAuthentication trigger (lambdas/user-account) creates a new user's
 * account, first workspace and default fleet, once.
 */
export class ConsoleUsers extends Construct {
  readonly userPool: UserPool;
  readonly client: UserPoolClient;
  /** The sign-up trigger's Lambda. */
  readonly trigger: HandlerFunction;

  constructor(scope: Construct, id: string, props: ConsoleUsersProps) {
    super(scope, id);
    this.trigger = new HandlerFunction(this, 'UserAccountHandler', {
      source: 'user-account',
      description: 'Fleetstream user pool trigger: a new user’s account, first workspace and default fleet',
      // Cognito waits at most 5 s for a trigger.
      timeout: Duration.seconds(5),
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
    });
    this.trigger.bindTable(props.registry, props.registryEnv, 'read-write');

    this.userPool = new UserPool(this, 'UserPool', {
      selfSignUpEnabled: true,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      autoVerify: { email: true },
      userVerification: { emailStyle: VerificationEmailStyle.CODE },
      standardAttributes: { email: { required: true, mutable: true } },
      // As NIST SP 800-63B asks: length over composition rules; the local pool has the same (local/cognito-local.ts).
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: false,
        tempPasswordValidity: Duration.days(3),
      },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      lambdaTriggers: { postConfirmation: this.trigger, postAuthentication: this.trigger },
      deletionProtection: props.removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy: props.removalPolicy,
    });
    this.client = this.userPool.addClient('ConsoleClient', {
      userPoolClientName: 'fleetstream-console',
      generateSecret: false,
      // CDK adds ALLOW_REFRESH_TOKEN_AUTH to any flow.
      authFlows: { userPassword: true },
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.days(30),
    });

    Validations.of(this.userPool).acknowledge(
      {
        id: 'AwsSolutions-COG2',
        reason:
          'MFA is optional (TOTP) rather than required: the console is self-service sign-up for fleet operators, and requiring MFA would block first sign-in for users without an authenticator app; accounts may turn it on.',
      },
      {
        id: 'AwsSolutions-COG1',
        reason:
          'The policy asks for 12 characters with lower and upper case letters and digits but no symbol: NIST SP 800-63B favours length over composition rules, which push users to predictable substitutions.',
      },
      {
        id: 'AwsSolutions-COG8',
        reason:
          'The Plus feature plan (threat protection) is billed per active user; the console’s pool runs on Essentials, and a deployer can move it to Plus without changing the console.',
      },
      {
        id: 'AwsSolutions-COG3',
        reason:
          'Threat protection (advanced security) needs the Plus feature plan, billed per active user; the pool runs on Essentials and deployers can turn it on without changing the console.',
      },
    );
  }
}
