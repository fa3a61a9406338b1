import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/** A message the user pool would have e-mailed: the verification or password-reset code. */
export interface OutboxMessage {
  /** The address it would have gone to. */
  to: string;
  /** The user's name in the pool (its `sub` in an e-mail-named pool). */
  username: string;
  code: string;
  /** SignUp, ResendCode, ForgotPassword, … as Cognito names the message. */
  reason?: string;
  sent_at: string;
}

/** A Cognito trigger, invoked in this process with the event Cognito sends to Lambda. */
export type CognitoTrigger = (event: Record<string, unknown>) => Promise<unknown>;

/** The user pool triggers cognito-local calls (its TriggersService); a pool naming another cannot run on it. */
export const COGNITO_LOCAL_TRIGGERS = ['PreSignUp', 'PostConfirmation', 'PostAuthentication', 'PreTokenGeneration', 'UserMigration', 'CustomMessage'] as const;
export type CognitoTriggerName = (typeof COGNITO_LOCAL_TRIGGERS)[number];

/**
 * Thrown by a trigger that Cognito may not invoke (no resource policy lets cognito-idp call its
 * function): the call fails as Cognito's does, with UnexpectedLambdaException, not as a failure of
 * the function.
 */
export class TriggerInvokeRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TriggerInvokeRefusedError';
  }
}

/** CreateUserPool's request, as far as the local pool is made from it. */
export type UserPoolSettings = Record<string, unknown> & { PoolName: string };
/** CreateUserPoolClient's request without the pool's ID. */
export type UserPoolClientSettings = Record<string, unknown> & { ClientName: string };

export interface LocalCognitoOptions {
  /** Port of the JSON API; 0: one the system chooses (cognito-local's usual 9229 is the npm start default). */
  port: number;
  /** Where the pools and users are kept; a temporary folder (deleted on stop) when undefined. */
  dataDir?: string;
  /** Lambda triggers by Cognito's trigger name (PostConfirmation, PostAuthentication, …). */
  triggers?: Partial<Record<CognitoTriggerName, CognitoTrigger>>;
  /** The pool's settings (CreateUserPool's request); LOCAL_POOL, like the stack's, when absent. */
  pool?: UserPoolSettings;
  /** Its app clients (CreateUserPoolClient's requests); LOCAL_CLIENT when absent. */
  clients?: UserPoolClientSettings[];
  /** Called for every message the pool sends (npm start prints it). */
  onMessage?: (message: OutboxMessage) => void;
}

/** The engine, its pool and app client, and the messages it has "sent". */
export interface LocalCognito {
  /** The JSON API (the console's `cognitoEndpoint`). */
  endpoint: string;
  userPoolId: string;
  /** The first app client's ID. */
  userPoolClientId: string;
  /** Every app client's ID, in the order of the options' `clients`. */
  clientIds: string[];
  /** `iss` of its tokens; its JWKS is at `<issuer>/.well-known/jwks.json`. */
  issuer: string;
  outbox: OutboxMessage[];
  /** Calls one of the JSON API's operations in this process (AdminCreateUser, …). */
  call: <T = Record<string, unknown>>(operation: string, request: Record<string, unknown>) => Promise<T>;
  stop: () => Promise<void>;
}

/** The pool's settings, as the stack's user pool (lib/constructs/console-users.ts) has them. */
export const LOCAL_POOL = {
  PoolName: 'fleetstream-users',
  UsernameAttributes: ['email'],
  AutoVerifiedAttributes: ['email'],
  Policies: { PasswordPolicy: { MinimumLength: 12, RequireLowercase: true, RequireUppercase: true, RequireNumbers: true, RequireSymbols: false } },
};
export const LOCAL_CLIENT = {
  ClientName: 'fleetstream-console',
  GenerateSecret: false,
  ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
  AccessTokenValidity: 60,
  IdTokenValidity: 60,
  RefreshTokenValidity: 30,
  TokenValidityUnits: { AccessToken: 'minutes', IdToken: 'minutes', RefreshToken: 'days' },
};

const WORKER_FILE = new URL('./cognito-local-worker.mjs', import.meta.url);

/**
 * Starts cognito-local (the real engine, its JSON API on `port`) in a worker thread of this process
 * (local/cognito-local-worker.mjs says why a thread), with a user pool and app clients (the given
 * settings, or ones like the stack's; created on the first start, found again in `dataDir` and
 * updated to the settings on the next), messages captured in an outbox instead of printed, and the
 * given triggers run here, in the runtime's process. What cognito-local leaves unchecked of those
 * settings the worker checks: the password policy, admin-only sign-up, the clients' auth flows.
 */
export const startLocalCognito = async (options: LocalCognitoOptions): Promise<LocalCognito> => {
  const temporary = options.dataDir ? undefined : mkdtempSync(join(tmpdir(), 'fleetstream-cognito-'));
  const triggers = options.triggers ?? {};
  const worker = new Worker(WORKER_FILE, {
    // Plain JavaScript: none of the parent's flags (under `npm start`, tsx's loader would be set up
    // again in the thread, a third of a second).
    execArgv: [],
    workerData: {
      port: options.port,
      dir: options.dataDir ?? temporary,
      triggerNames: Object.keys(triggers),
      pool: options.pool ?? LOCAL_POOL,
      clients: options.clients ?? [LOCAL_CLIENT],
    },
  });
  const outbox: OutboxMessage[] = [];
  const waiting = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let stopped: () => void = () => undefined;
  const ready = new Promise<{ endpoint: string; userPoolId: string; clientIds: string[] }>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`cognito-local stopped (${code}) before it was ready`)));
    worker.on('message', async (message) => {
      if (message.type === 'ready') resolve(message);
      else if (message.type === 'stopped') stopped();
      else if (message.type === 'message') {
        outbox.push(message.entry);
        options.onMessage?.(message.entry);
      } else if (message.type === 'answer') {
        const call = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error === undefined) call?.resolve(message.result);
        else call?.reject(new Error(message.error));
      } else if (message.type === 'trigger') {
        const trigger = triggers[message.name as keyof typeof triggers];
        try {
          if (!trigger) throw new Error(`no ${message.name} trigger`);
          worker.postMessage({ type: 'answer', id: message.id, result: await trigger(message.event) });
        } catch (error) {
          worker.postMessage({
            type: 'answer',
            id: message.id,
            error: (error as Error).message || 'trigger failed',
            refused: error instanceof TriggerInvokeRefusedError,
          });
        }
      }
    });
  });
  const cleanup = () => temporary && rmSync(temporary, { recursive: true, force: true });
  let started: Awaited<typeof ready>;
  try {
    started = await ready;
  } catch (error) {
    await worker.terminate();
    cleanup();
    throw error;
  }
  worker.removeAllListeners('exit');
  const call = <T>(operation: string, request: Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      const id = ++nextId;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ type: 'call', id, operation, request });
    });
  const stop = async () => {
    await new Promise<void>((resolve) => {
      stopped = resolve;
      worker.postMessage({ type: 'stop' });
    });
    await worker.terminate();
    cleanup();
  };
  const { endpoint, userPoolId, clientIds } = started;
  return { endpoint, userPoolId, userPoolClientId: clientIds[0], clientIds, issuer: `${endpoint}/${userPoolId}`, outbox, call, stop };
};
