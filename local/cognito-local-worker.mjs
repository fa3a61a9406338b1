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
// Its KMS helper loads the AWS SDK v2, which warns on load that it is past its end of support.
process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';

const { port, dir, triggerNames, pool: poolSettings, client: clientSettings } = workerData;
const pino = require(require.resolve('pino', { paths: [require.resolve('cognito-local')] }));
const logger = pino({ level: process.env.COGNITO_LOCAL_DEBUG ? 'debug' : 'silent' });
const ctx = { logger };

const { StormDBDataStoreFactory } = lib('services/dataStore/stormDb.js');
const { CognitoServiceFactoryImpl } = lib('services/cognitoService.js');
const { UserPoolServiceFactoryImpl } = lib('services/userPoolService.js');
const { DateClock, TriggersService, LambdaService, MessagesService } = lib('services/index.js');
const { MessageDeliveryService } = lib('services/messageDelivery/messageDelivery.js');
const { JwtTokenGenerator } = lib('services/tokenGenerator.js');
const { CryptoService } = lib('services/crypto.js');
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
        return { StatusCode: 200, FunctionError: 'Unhandled', Payload: JSON.stringify({ errorMessage: error.message }) };
      }
    },
  }),
};

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
const cognito = await new CognitoServiceFactoryImpl(dataDirectory, dataStoreFactory, new UserPoolServiceFactoryImpl(clock, dataStoreFactory)).create(ctx, config.UserPoolDefaults);
const triggers = new TriggersService(clock, cognito, new LambdaService(config.TriggerFunctions, lambdaClient), new CryptoService(config.KMSConfig));
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
const router = Router(services);
const route = (target) => (target === 'GlobalSignOut' ? globalSignOut : router(target));
const call = (operation, request) => route(operation)(ctx, request);

// The pool and client of an earlier start, if they still exist; new ones otherwise.
const idsFile = join(dir, 'pool.json');
let ids = existsSync(idsFile) ? JSON.parse(readFileSync(idsFile, 'utf8')) : undefined;
if (ids && !(await call('DescribeUserPoolClient', { UserPoolId: ids.userPoolId, ClientId: ids.userPoolClientId }).catch(() => undefined))) ids = undefined;
if (!ids) {
  const { UserPool } = await call('CreateUserPool', poolSettings);
  const { UserPoolClient } = await call('CreateUserPoolClient', { UserPoolId: UserPool.Id, ...clientSettings });
  ids = { userPoolId: UserPool.Id, userPoolClientId: UserPoolClient.ClientId };
  writeFileSync(idsFile, JSON.stringify(ids, null, 2) + '\n');
}

const server = await createServer(route, logger, config.ServerConfig, services).start();
endpoint = `http://127.0.0.1:${server.address().port}`;
// The token generator reads its issuer from this object at each sign-in.
config.TokenConfig.IssuerDomain = endpoint;

parentPort.on('message', async (message) => {
  if (message.type === 'answer') {
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error === undefined) waiting?.resolve(message.result);
    else waiting?.reject(new Error(message.error));
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
