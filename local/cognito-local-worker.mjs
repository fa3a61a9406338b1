// The cognito-local engine in a worker thread of the local runtime (local/cognito-local.ts starts
// it). A thread rather than the main one because cognito-local is CommonJS that requires an ES
// module (@scure/base, via otplib): Node 22 loads that with require(), jest's module registry
// (which runs the runtime in the e2e tests) cannot, and a worker is outside that registry.
// Plain JavaScript: a worker is not transformed by tsx or jest.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { importJWK, jwtVerify } from 'jose';

const require = createRequire(import.meta.url);
// cognito-local has no `exports` map: its parts are loaded by path, so that the engine runs with
// our data folder, message sender and triggers (its own start script hard-codes `.cognito/`).
const lib = (path) => require(`cognito-local/lib/${path}`);
// cognito-local encrypts a code with KMS only for a CustomEmailSender trigger, which the local pool
// never runs (COGNITO_LOCAL_TRIGGERS in local/cognito-local.ts). Its crypto service would load the
// AWS SDK v2 and the AWS Encryption SDK for that, a third of this worker's start: a stand-in that
// refuses takes its place.
const noKms = {
  encrypt: async () => {
    throw new Error('KMS encryption (a CustomEmailSender trigger) does not run on the local user pool');
  },
};

const { port, dir, triggerNames, pool: poolSettings, clients: clientSettings } = workerData;
const pino = require(require.resolve('pino', { paths: [require.resolve('cognito-local')] }));
const logger = pino({ level: process.env.COGNITO_LOCAL_DEBUG ? 'debug' : 'silent' });
const ctx = { logger };

const { StormDBDataStoreFactory } = lib('services/dataStore/stormDb.js');
const { CognitoServiceFactoryImpl } = lib('services/cognitoService.js');
const { UserPoolServiceFactoryImpl, attributesToRecord } = lib('services/userPoolService.js');
const { DateClock, TriggersService, LambdaService, MessagesService } = lib('services/index.js');
const { MessageDeliveryService } = lib('services/messageDelivery/messageDelivery.js');
const { JwtTokenGenerator } = lib('services/tokenGenerator.js');
const { otp } = lib('services/otp.js');
const { DefaultConfig } = lib('server/config.js');
const { Router } = lib('server/Router.js');
const { createServer } = lib('server/server.js');
const errors = lib('errors.js');
const { jwk } = lib('keys/cognitoLocal.public.json');

// Port 0 lets the system choose while listening (a port chosen beforehand could be taken by then);
// the address, and so the tokens' issuer, is known once the server listens.
let endpoint = `http://127.0.0.1:${port}`;
let nextId = 0;
const pending = new Map();
const ask = (message) =>
  new Promise((resolve, reject) => {
    const id = ++nextId;
    pending.set(id, { resolve, reject });
    parentPort.postMessage({ ...message, id });
  });

// Messages the pool would e-mail go to the runtime's outbox.
const sender = {
  sendEmail: async (_ctx, user, destination, message) => {
    parentPort.postMessage({ type: 'message', entry: { to: destination, username: user.Username, code: message.__code, sent_at: new Date().toISOString() } });
  },
  sendSms: async () => undefined,
};
// Cognito calls a trigger Lambda synchronously; here the "Lambda client" asks the runtime to run it.
const lambdaClient = {
  invoke: ({ FunctionName, Payload }) => ({
    promise: async () => {
      try {
        const result = await ask({ type: 'trigger', name: FunctionName, event: JSON.parse(Payload) });
        return { StatusCode: 200, Payload: JSON.stringify(result) };
      } catch (error) {
        // Not invoked at all: LambdaService turns a failed Invoke into UnexpectedLambdaException.
        if (error.refused) throw error;
        return { StatusCode: 200, FunctionError: 'Unhandled', Payload: JSON.stringify({ errorMessage: error.message }) };
      }
    },
  }),
};

/**
 * A trigger the runtime could not invoke (Cognito may not: no resource policy for cognito-idp)
 * fails the operation as Cognito's does: UnexpectedLambdaException naming the trigger, where
 * cognito-local would answer its own misspelt code and a generic message.
 */
class TriggerLambdaService extends LambdaService {
  async invoke(innerCtx, trigger, event) {
    try {
      return await super.invoke(innerCtx, trigger, event);
    } catch (error) {
      if (error instanceof errors.UnexpectedLambdaExceptionError)
        throw new errors.CognitoError('UnexpectedLambdaException', `${trigger} invocation failed due to error AccessDeniedException.`);
      throw error;
    }
  }
}

const config = {
  ...DefaultConfig,
  TriggerFunctions: Object.fromEntries(triggerNames.map((name) => [name, name])),
  UserPoolDefaults: { UsernameAttributes: ['email'] },
  TokenConfig: { IssuerDomain: endpoint },
  ServerConfig: { port, hostname: '127.0.0.1', development: false, https: false },
};
const clock = new DateClock();
const dataDirectory = join(dir, 'db');
mkdirSync(dataDirectory, { recursive: true });
const dataStoreFactory = new StormDBDataStoreFactory(dataDirectory);
const cognito = await new CognitoServiceFactoryImpl(dataDirectory, dataStoreFactory, new UserPoolServiceFactoryImpl(clock, dataStoreFactory)).create(
  ctx,
  config.UserPoolDefaults,
);
const lambdaService = new TriggerLambdaService(config.TriggerFunctions, lambdaClient);
const triggers = new TriggersService(clock, cognito, lambdaService, noKms);
// cognito-local logs and ignores a failed PostConfirmation or PostAuthentication trigger; Cognito
// fails the ConfirmSignUp or the sign-in with the trigger's error (the user stays confirmed).
for (const [name, method] of [
  ['PostConfirmation', 'postConfirmation'],
  ['PostAuthentication', 'postAuthentication'],
]) {
  triggers[method] = async (innerCtx, { clientId, clientMetadata, source, userAttributes, username, userPoolId }) => {
    await lambdaService.invoke(innerCtx, name, {
      clientId,
      clientMetadata,
      triggerSource: source,
      userAttributes: attributesToRecord(userAttributes),
      username,
      userPoolId,
    });
  };
}
const services = {
  clock,
  cognito,
  config,
  messages: new MessagesService(triggers, new MessageDeliveryService(sender)),
  otp,
  tokenGenerator: new JwtTokenGenerator(clock, triggers, config.TokenConfig),
  triggers,
};

/**
 * GlobalSignOut, which cognito-local lacks: the user's refresh tokens stop working, as in Cognito.
 * Access tokens already issued stay valid to their `exp` for whoever checks them offline against
 * the JWKS, as Cognito's own do.
 */
const globalSignOut = async (innerCtx, req) => {
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(req.AccessToken ?? '', await importJWK(jwk, 'RS256'), { algorithms: ['RS256'] }));
  } catch {
    throw new errors.NotAuthorizedError();
  }
  if (claims.token_use !== 'access' || !claims.client_id || !claims.sub) throw new errors.NotAuthorizedError();
  const pool = await cognito.getUserPoolForClientId(innerCtx, String(claims.client_id));
  const user = await pool.getUserByUsername(innerCtx, String(claims.sub));
  if (!user) throw new errors.NotAuthorizedError();
  await pool.saveUser(innerCtx, { ...user, RefreshTokens: [] });
  return {};
};
/**
 * What Cognito checks and cognito-local does not, for the settings the pool and clients are made
 * with: the password policy (a new password on SignUp, AdminCreateUser, AdminSetUserPassword and
 * ConfirmForgotPassword), self sign-up turned off (AllowAdminCreateUserOnly), and the client's
 * explicit auth flows on InitiateAuth. Cognito's own exceptions and wording.
 */
const passwordProblem = (policy, password) => {
  if (!policy || typeof password !== 'string') return undefined;
  if (password.length < (policy.MinimumLength ?? 8)) return 'Password not long enough';
  if (policy.RequireLowercase && !/[a-z]/.test(password)) return 'Password must have lowercase characters';
  if (policy.RequireUppercase && !/[A-Z]/.test(password)) return 'Password must have uppercase characters';
  if (policy.RequireNumbers && !/[0-9]/.test(password)) return 'Password must have numeric characters';
  if (policy.RequireSymbols && !/[^A-Za-z0-9]/.test(password)) return 'Password must have symbol characters';
  return undefined;
};
const checkPassword = (options, password) => {
  const problem = passwordProblem(options.Policies?.PasswordPolicy, password);
  if (problem) throw new errors.CognitoError('InvalidPasswordException', `Password did not conform with policy: ${problem}`);
};
// A client without ExplicitAuthFlows gets Cognito's defaults.
const DEFAULT_FLOWS = ['ALLOW_USER_SRP_AUTH', 'ALLOW_CUSTOM_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'];
const FLOW_GRANTS = {
  USER_PASSWORD_AUTH: 'ALLOW_USER_PASSWORD_AUTH',
  REFRESH_TOKEN_AUTH: 'ALLOW_REFRESH_TOKEN_AUTH',
  REFRESH_TOKEN: 'ALLOW_REFRESH_TOKEN_AUTH',
  ADMIN_USER_PASSWORD_AUTH: 'ALLOW_ADMIN_USER_PASSWORD_AUTH',
  USER_SRP_AUTH: 'ALLOW_USER_SRP_AUTH',
  CUSTOM_AUTH: 'ALLOW_CUSTOM_AUTH',
};
const checks = {
  SignUp: async (innerCtx, req) => {
    const pool = await cognito.getUserPoolForClientId(innerCtx, req.ClientId);
    if (pool.options.AdminCreateUserConfig?.AllowAdminCreateUserOnly) throw new errors.NotAuthorizedError('SignUp is not permitted for this user pool');
    checkPassword(pool.options, req.Password);
  },
  ConfirmForgotPassword: async (innerCtx, req) => checkPassword((await cognito.getUserPoolForClientId(innerCtx, req.ClientId)).options, req.Password),
  AdminCreateUser: async (innerCtx, req) =>
    req.TemporaryPassword !== undefined && checkPassword((await cognito.getUserPool(innerCtx, req.UserPoolId)).options, req.TemporaryPassword),
  AdminSetUserPassword: async (innerCtx, req) => checkPassword((await cognito.getUserPool(innerCtx, req.UserPoolId)).options, req.Password),
  InitiateAuth: async (innerCtx, req) => {
    const client = await cognito.getAppClient(innerCtx, req.ClientId);
    if (!client) return; // cognito-local answers an unknown client itself
    const grant = FLOW_GRANTS[req.AuthFlow];
    if (grant && !(client.ExplicitAuthFlows?.length ? client.ExplicitAuthFlows : DEFAULT_FLOWS).includes(grant)) {
      throw new errors.InvalidParameterError(`${req.AuthFlow} flow not enabled for this client`);
    }
  },
};
const router = Router(services);
const route = (target) => {
  if (target === 'GlobalSignOut') return globalSignOut;
  const check = checks[target];
  if (!check) return router(target);
  return async (innerCtx, req) => {
    await check(innerCtx, req);
    return router(target)(innerCtx, req);
  };
};
const call = (operation, request) => route(operation)(ctx, request);

// The pool and clients of an earlier start, if they still exist and the pool's fixed settings
// (how users are named) are the same: updated to the settings given, as a stack update would.
// New ones otherwise (CloudFormation replaces a pool whose username attributes change).
const idsFile = join(dir, 'pool.json');
let ids = existsSync(idsFile) ? JSON.parse(readFileSync(idsFile, 'utf8')) : undefined;
if (ids) ids = { userPoolId: ids.userPoolId, clientIds: ids.clientIds ?? [ids.userPoolClientId] }; // pool.json of before several clients
const kept = ids && (await call('DescribeUserPool', { UserPoolId: ids.userPoolId }).catch(() => undefined));
const sameNaming = (a = [], b = []) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
if (kept && sameNaming(kept.UserPool.UsernameAttributes, poolSettings.UsernameAttributes)) {
  const { PoolName: _name, UsernameAttributes: _u, AliasAttributes: _a, Schema: _s, UsernameConfiguration: _c, ...mutable } = poolSettings;
  await call('UpdateUserPool', { UserPoolId: ids.userPoolId, ...mutable });
  const clientIds = [];
  for (const [i, settings] of clientSettings.entries()) {
    const { GenerateSecret: _secret, ...update } = settings;
    const known = ids.clientIds[i] && (await call('DescribeUserPoolClient', { UserPoolId: ids.userPoolId, ClientId: ids.clientIds[i] }).catch(() => undefined));
    if (known) await call('UpdateUserPoolClient', { UserPoolId: ids.userPoolId, ClientId: ids.clientIds[i], ...update });
    clientIds.push(known ? ids.clientIds[i] : (await call('CreateUserPoolClient', { UserPoolId: ids.userPoolId, ...settings })).UserPoolClient.ClientId);
  }
  ids = { userPoolId: ids.userPoolId, clientIds };
} else {
  const { UserPool } = await call('CreateUserPool', poolSettings);
  const clientIds = [];
  for (const settings of clientSettings) clientIds.push((await call('CreateUserPoolClient', { UserPoolId: UserPool.Id, ...settings })).UserPoolClient.ClientId);
  ids = { userPoolId: UserPool.Id, clientIds };
}
writeFileSync(idsFile, `${JSON.stringify(ids, null, 2)}\n`);

const server = await createServer(route, logger, config.ServerConfig, services).start();
endpoint = `http://127.0.0.1:${server.address().port}`;
// The token generator reads its issuer from this object at each sign-in.
config.TokenConfig.IssuerDomain = endpoint;

parentPort.on('message', async (message) => {
  if (message.type === 'answer') {
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error === undefined) waiting?.resolve(message.result);
    else waiting?.reject(Object.assign(new Error(message.error), { refused: message.refused === true }));
  } else if (message.type === 'call') {
    try {
      parentPort.postMessage({ type: 'answer', id: message.id, result: JSON.parse(JSON.stringify((await call(message.operation, message.request)) ?? {})) });
    } catch (error) {
      parentPort.postMessage({ type: 'answer', id: message.id, error: `${error.code ?? error.name}: ${error.message}` });
    }
  } else if (message.type === 'stop') {
    server.closeAllConnections();
    server.close(() => parentPort.postMessage({ type: 'stopped' }));
  }
});
parentPort.postMessage({ type: 'ready', endpoint, ...ids });
