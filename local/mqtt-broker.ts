import { Aedes, type AedesOptions, type AuthenticateError, type Client } from 'aedes';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { generate } from 'selfsigned';
import type { IotAuthorizerResult, IotPolicy } from '../lambdas/domain/doors/device-mqtt';
import { MQTT_RULES, type MqttRule } from '../lambdas/mqtt-rules';
import { parseRuleSql } from './cloud-assembly/iot-sql';
import { mqttWebSocketListener, type MqttWebSocketListener } from './mqtt-websocket';
import { asCaller, countIotCore, IOT_RULES_CALLER, withInvocation } from './request-counter';

/**
 * The embedded MQTT broker standing in for AWS IoT Core on `npm start` (DESIGN §9): `aedes` on
 * 127.0.0.1, a plain port and a TLS port (its CA made on first start and kept in the data folder),
 * running the same custom authorizer handler at CONNECT, enforcing the policy it returns on
 * every publish, subscribe and delivery, applying the topic rules of `lambdas/mqtt-rules.ts`
 * into the same SQS queues, publishing presence events as IoT Core does, and serving the IoT
 * data plane's Publish API for cloud-to-device messages and its DeleteConnection
 * (AWS_ENDPOINT_URL_IOT_DATA_PLANE).
 */

/** The broker's CA and its server certificate (PEM). */
export interface BrokerTls {
  /** What device credentials carry as `cacert`. */
  caCert: string;
  key: string;
  cert: string;
}

const CA_CERT_FILE = 'mqtt-ca.pem';
const CA_KEY_FILE = 'mqtt-ca-key.pem';
const YEAR_DAYS = 365;
const daysFromNow = (days: number) => new Date(Date.now() + days * 86_400_000);

/**
 * The broker's CA (made once, then read from `dataDir`, so credentials issued earlier keep
 * working across restarts) and a server certificate for 127.0.0.1 and localhost signed by it.
 * Without a data folder the CA lives only as long as the process.
 */
export const brokerTls = async (dataDir: string | undefined): Promise<BrokerTls> => {
  const caCertFile = dataDir && join(dataDir, CA_CERT_FILE);
  const caKeyFile = dataDir && join(dataDir, CA_KEY_FILE);
  let ca: { cert: string; key: string };
  if (caCertFile && caKeyFile && existsSync(caCertFile) && existsSync(caKeyFile)) {
    ca = { cert: readFileSync(caCertFile, 'utf8'), key: readFileSync(caKeyFile, 'utf8') };
  } else {
    const made = await generate([{ name: 'commonName', value: 'Fleetstream local MQTT CA' }], {
      notAfterDate: daysFromNow(10 * YEAR_DAYS),
      algorithm: 'sha256',
      keySize: 2048,
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    ca = { cert: made.cert, key: made.private };
    if (caCertFile && caKeyFile) {
      writeFileSync(caKeyFile, ca.key, { mode: 0o600 });
      writeFileSync(caCertFile, ca.cert);
    }
  }
  const server = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    notAfterDate: daysFromNow(YEAR_DAYS),
    algorithm: 'sha256',
    keySize: 2048,
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  return { caCert: ca.cert, key: server.private, cert: server.cert };
};

/**
 * A topic rule as the broker runs it: the topic filter of its FROM, and what it does with a matching
 * publish (resolves once its actions, or its error action, are done).
 */
export interface BrokerRule {
  topicFilter: string;
  run: (input: { topic: string; payload: Buffer; receivedAt: number; clientId: string }) => Promise<void>;
}

/** The custom authorizer handler (lambdas/mqtt-authorizer) as the broker calls it. */
export type MqttAuthorizer = (event: unknown, context: { invokedFunctionArn: string }) => Promise<IotAuthorizerResult>;

export interface MqttBrokerOptions {
  /** Plain MQTT port (0: a free one). */
  port: number;
  /** MQTT over TLS port (0: a free one). */
  tlsPort: number;
  /** Port of the IoT data plane's Publish API (0: a free one). */
  dataPlanePort: number;
  /**
   * Port of MQTT over WebSocket (`ws://127.0.0.1:<port>/mqtt`, 0: a free one), the console's door,
   * whose connections `consoleAuthorizer` authorizes; none when absent.
   */
  wsPort?: number;
  tls: BrokerTls;
  authorizer: MqttAuthorizer;
  /** The console's custom authorizer (lambdas/console-authorizer): the WebSocket listener's, as the console's domain configuration's on AWS. */
  consoleAuthorizer?: MqttAuthorizer;
  /**
   * Sends a topic rule's message to the rule's queue: the rows of `lambdas/mqtt-rules.ts` with
   * their SQS action (npm start). Unused when `rules` is given.
   */
  sendToQueue?: (queue: MqttRule['queue'], message: Record<string, unknown>) => Promise<void>;
  /** The topic rules to run instead (the cloud-assembly mode: the template's rules). */
  rules?: readonly BrokerRule[];
  /** Records a refused subscribe, which IoT Core answers with SUBACK 0x80 (see docs/devices.md). */
  onSubscribeRefused?: (deviceId: string, topic: string) => Promise<void>;
  /** The account and region the policy's ARNs name. */
  region?: string;
}

export interface MqttBroker {
  /** `mqtt://127.0.0.1:<port>` */
  url: string;
  /** `mqtts://127.0.0.1:<port>` */
  tlsUrl: string;
  /** The value of AWS_ENDPOINT_URL_IOT_DATA_PLANE. */
  dataPlaneEndpoint: string;
  /** `ws://127.0.0.1:<port>/mqtt` when the WebSocket listener runs, else empty. */
  wsUrl: string;
  broker: Aedes;
  stop: () => Promise<void>;
}

// IoT policy resources use `*` (any characters) and `?` (one character) as wildcards.
const policyPattern = (resource: string) =>
  new RegExp(
    `^${resource
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

/** Whether an IoT policy allows `action` on `resource`: an Allow matches and no Deny does. */
export const policyAllows = (policies: IotPolicy[], action: string, resource: string) => {
  const matching = (effect: 'Allow' | 'Deny') =>
    policies.some((p) =>
      p.Statement.some(
        (s) =>
          s.Effect === effect &&
          [s.Action].flat().some((a) => a === action || a === 'iot:*') &&
          [s.Resource].flat().some((r) => policyPattern(r).test(resource)),
      ),
    );
  return matching('Allow') && !matching('Deny');
};

/** Whether a concrete topic matches an MQTT topic filter (`+` one level, `#` the rest). */
export const topicMatches = (filter: string, topic: string) => {
  // A filter that begins with a wildcard does not match a `$` topic (MQTT 3.1.1, 4.7.2).
  if (topic.startsWith('$') && (filter.startsWith('+') || filter.startsWith('#'))) return false;
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i += 1) {
    if (f[i] === '#') return true;
    if (i >= t.length || (f[i] !== '+' && f[i] !== t[i])) return false;
  }
  return f.length === t.length;
};

/**
 * IoT Core's largest publish payload, 128 KB: a larger publish is refused and its connection
 * closed (lifecycle reason CLIENT_ERROR, "PAYLOAD_LIMIT_EXCEEDED"); the data plane's Publish answers
 * 413. https://docs.aws.amazon.com/iot/latest/developerguide/topicdata.html
 */
export const MAX_PUBLISH_BYTES = 128 * 1024;

interface Session {
  policies: IotPolicy[];
  principalId: string;
  ip: string;
  sessionIdentifier: string;
  /** Why IoT Core would close this connection (`AUTH_ERROR` after a refused publish). */
  disconnectReason?: string;
}

const listen = (server: TcpServer | HttpServer, port: number) =>
  new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });

const close = (server: TcpServer | HttpServer) => new Promise<void>((resolve) => server.close(() => resolve()));

/**
 * The rows of `lambdas/mqtt-rules.ts` as the broker runs them: their SQL evaluated as IoT Core
 * evaluates it (the cloud-assembly runtime's evaluator), one SQS message per rule action, as IoT
 * Core sends them, awaited before PUBACK: a publish the device saw acknowledged is on its queue.
 */
export const mqttRules = (sendToQueue: (queue: MqttRule['queue'], message: Record<string, unknown>) => Promise<void>): BrokerRule[] =>
  MQTT_RULES.map((r) => {
    const statement = parseRuleSql(r.sql, '2016-03-23');
    return {
      topicFilter: statement.topicFilter,
      run: async (input) => {
        if (statement.where(input)) await sendToQueue(r.queue, statement.select(input));
      },
    };
  });

/** The topic rules the broker runs: the given ones, or the rows of `lambdas/mqtt-rules.ts` sending to their queues. */
const topicRules = (options: MqttBrokerOptions): readonly BrokerRule[] => {
  if (!options.rules && !options.sendToQueue) throw new Error('startMqttBroker needs the topic rules or the queues their actions send to.');
  return options.rules ?? mqttRules(options.sendToQueue!);
};

/** Runs the rules whose topic filter matches a publish; resolves when all of them are done. */
type RuleRunner = (topic: string, payload: Buffer, receivedAt: number, clientId: string) => Promise<void>;

// Each rule that matches is one rule triggered and one action executed, as IoT Core bills them.
const ruleRunner =
  (rules: readonly BrokerRule[]): RuleRunner =>
  (topic, payload, receivedAt, clientId) =>
    Promise.all(
      rules
        .filter((r) => topicMatches(r.topicFilter, topic))
        .map((r) => {
          countIotCore('RuleTriggered', r.topicFilter);
          countIotCore('ActionExecuted', r.topicFilter);
          return asCaller(IOT_RULES_CALLER, () => r.run({ topic, payload, receivedAt, clientId }));
        }),
    ).then(() => undefined);

/** Publishes a client's lifecycle event (connected, disconnected) to the rules, as IoT Core does. */
const publishPresence = (applyRules: RuleRunner, client: Client, session: Session, eventType: 'connected' | 'disconnected', reason?: string) => {
  const topic = `$aws/events/presence/${eventType}/${client.id}`;
  // The layout of IoT Core's lifecycle events (developer guide, "Connect/Disconnect events").
  const event = {
    clientId: client.id,
    timestamp: Date.now(),
    eventType,
    sessionIdentifier: session.sessionIdentifier,
    principalIdentifier: session.principalId,
    ...(eventType === 'connected'
      ? { ipAddress: session.ip }
      : { clientInitiatedDisconnect: reason === 'CLIENT_INITIATED_DISCONNECT', disconnectReason: reason }),
    versionNumber: 0,
  };
  return applyRules(topic, Buffer.from(JSON.stringify(event)), event.timestamp, client.id);
};

/** What the broker's hooks share: the options, the sessions of authorized clients, and the ARNs their policies name. */
interface BrokerContext {
  options: MqttBrokerOptions;
  sessions: WeakMap<Client, Session>;
  /** The ARN prefix of the account's IoT resources. */
  arn: string;
  functionArn: string;
  /** Whether a client's connection came in over WebSocket (the console's door). */
  viaWebSocket: (conn: unknown) => boolean;
  applyRules: RuleRunner;
  /** The broker, once made (the hooks run only after). */
  broker: () => Aedes;
}

/**
 * CONNECT: runs the custom authorizer and keeps the policies it returns as the client's session,
 * or refuses the connection as IoT Core does.
 */
const authenticateWith =
  ({ options, sessions, functionArn, viaWebSocket, broker }: BrokerContext): AedesOptions['authenticate'] =>
  (client, username, password, done) => {
    const tls = (client.conn as { encrypted?: boolean }).encrypted === true;
    const web = viaWebSocket(client.conn);
    // The WebSocket door has the console's authorizer (and none refuses it); the others the devices'.
    const [name, authorizer]: [string, MqttAuthorizer] = web
      ? ['console-authorizer', options.consoleAuthorizer ?? (async () => Promise.reject(new Error('no console authorizer')))]
      : ['mqtt-authorizer', options.authorizer];
    const event = {
      signatureVerified: false,
      protocols: web ? ['wss', 'mqtt'] : tls ? ['tls', 'mqtt'] : ['mqtt'],
      protocolData: { mqtt: { username, password: password?.toString('base64'), clientId: client.id } },
      connectionMetadata: { id: randomUUID() },
    };
    withInvocation(name, () => authorizer(event, { invokedFunctionArn: functionArn.replace(/mqtt-authorizer$/, name) })).then(
      (answer) => {
        if (!answer.isAuthenticated) {
          // IoT Core refuses a connection its authorizer denies with "not authorized".
          const error = Object.assign(new Error('Not authorized'), { returnCode: 5 }) as AuthenticateError;
          return done(error, false);
        }
        // aedes closes the older connection of a client ID that connects again, as IoT Core does,
        // which reports it as DUPLICATE_CLIENTID.
        const previous = (broker() as unknown as { clients: Record<string, Client | undefined> }).clients[client.id];
        const previousSession = previous && previous !== client ? sessions.get(previous) : undefined;
        if (previousSession) previousSession.disconnectReason ??= 'DUPLICATE_CLIENTID';
        const remote = (client.conn as { remoteAddress?: string }).remoteAddress ?? '';
        sessions.set(client, {
          policies: answer.policyDocuments.map((d) => JSON.parse(d) as IotPolicy),
          principalId: answer.principalId,
          ip: remote.replace(/^::ffff:/, ''),
          sessionIdentifier: randomUUID(),
        });
        done(null, true);
      },
      () => done(Object.assign(new Error('Server unavailable'), { returnCode: 3 }) as AuthenticateError, false),
    );
  };

/** The broker's hooks: the authorizer at CONNECT, the session's policy on every publish, subscribe and delivery, and the topic rules. */
const brokerHooks = (context: BrokerContext): AedesOptions => {
  const { options, sessions, arn, applyRules } = context;
  return {
    // Clients wait about 2 s for CONNACK; the authorizer answers well within that.
    connectTimeout: 5_000,
    authenticate: authenticateWith(context),
    authorizePublish: (client, packet, done) => {
      if (!client) return done(null); // the broker's own publishes (the data plane)
      const session = sessions.get(client);
      const size = Buffer.byteLength(packet.payload as Buffer | string);
      if (size > MAX_PUBLISH_BYTES) {
        if (session) session.disconnectReason = 'CLIENT_ERROR';
        return done(new Error(`a publish of ${size} bytes is over IoT Core's ${MAX_PUBLISH_BYTES}`));
      }
      if (session && policyAllows(session.policies, 'iot:Publish', `${arn}:topic/${packet.topic}`)) return done(null);
      // IoT Core closes an MQTT 3.1.1 connection that publishes where its policy does not allow,
      // with AUTH_ERROR as the disconnection's reason; so does this broker.
      if (session) session.disconnectReason = 'AUTH_ERROR';
      done(new Error(`publish to ${packet.topic} not authorized`));
    },
    authorizeSubscribe: (client, subscription, done) => {
      const session = sessions.get(client);
      if (session && policyAllows(session.policies, 'iot:Subscribe', `${arn}:topicfilter/${subscription.topic}`)) return done(null, subscription);
      void options.onSubscribeRefused?.(client.id, subscription.topic).catch(() => undefined);
      done(null, null); // SUBACK 0x80
    },
    authorizeForward: (client, packet) => {
      const session = sessions.get(client);
      if (!session || !policyAllows(session.policies, 'iot:Receive', `${arn}:topic/${packet.topic}`)) return null;
      // A message delivered to a subscriber is billed as a message too; the data plane's Publish is counted by the SDK.
      if (!packet.topic.startsWith('$'))
        countIotCore('PublishOut', packet.topic.split('/').slice(0, 2).join('/'), Buffer.byteLength(packet.payload as Buffer | string));
      return packet;
    },
    // The topic rules: a device's publish matching a rule goes to the queue before its PUBACK.
    published: (packet, client, done) => {
      if (!client || packet.topic.startsWith('$')) return done(null);
      const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
      countIotCore('PublishIn', packet.topic.split('/').slice(0, 2).join('/'), payload.length);
      applyRules(packet.topic, payload, Date.now(), client.id).then(
        () => done(null),
        (error: Error) => done(error),
      );
    },
  };
};

/** Publishes the presence events of authorized clients as they connect and disconnect. */
const trackPresence = (broker: Aedes, { sessions, applyRules }: BrokerContext) => {
  broker.on('clientReady', (client) => {
    const session = sessions.get(client);
    if (session) void publishPresence(applyRules, client, session, 'connected').catch(() => undefined);
  });
  broker.on('clientDisconnect', (client) => {
    const session = sessions.get(client);
    if (!session) return;
    const clean = (client as unknown as { _disconnected?: boolean })._disconnected;
    const reason = session.disconnectReason ?? (clean ? 'CLIENT_INITIATED_DISCONNECT' : 'CONNECTION_LOST');
    void publishPresence(applyRules, client, session, 'disconnected', reason).catch(() => undefined);
  });
  // A second connection with a client ID in use takes over, as on IoT Core.
  broker.on('clientError', () => undefined);
  broker.on('connectionError', () => undefined);
};

type Answer = (status: number, body: unknown, errorType?: string) => void;

/** The data plane's Publish: the body as a broker publish on the path's topic. */
const publishFromApi = (broker: Aedes, url: URL, topic: string, body: Buffer, answer: Answer) => {
  if (body.length > MAX_PUBLISH_BYTES) {
    return answer(413, { message: `The payload of ${body.length} bytes exceeds ${MAX_PUBLISH_BYTES}.` }, 'RequestEntityTooLargeException');
  }
  const qos = Number(url.searchParams.get('qos') ?? 0) === 1 ? 1 : 0;
  broker.publish({ cmd: 'publish', topic, payload: body, qos, retain: false, dup: false }, (error) =>
    error ? answer(500, { message: error.message }) : answer(200, {}),
  );
};

/**
 * The data plane's DeleteConnection: the client's connection closed, its disconnection reported
 * as IoT Core reports it (`API_INITIATED_DISCONNECT`); a client that is not connected is
 * ResourceNotFoundException, as on IoT Core (sessions are clean: none persists).
 */
const deleteConnection = ({ broker, sessions }: Pick<BrokerContext, 'broker' | 'sessions'>, clientId: string, answer: Answer) => {
  const client = (broker() as unknown as { clients: Record<string, Client | undefined> }).clients[clientId];
  if (!client) return answer(404, { message: `No connection of client ${clientId}.` }, 'ResourceNotFoundException');
  const session = sessions.get(client);
  if (session) session.disconnectReason = 'API_INITIATED_DISCONNECT';
  client.close(() => answer(200, {}));
};

/**
 * The IoT data plane's Publish (POST /topics/{topic}?qos=1, the payload as body) and
 * DeleteConnection (DELETE /connections/{clientId}) APIs, as @aws-sdk/client-iot-data-plane calls
 * them; signatures are not checked locally.
 */
const dataPlaneServer = (context: Pick<BrokerContext, 'broker' | 'sessions'>) =>
  createHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const answer: Answer = (status, body, errorType) =>
      res.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) }).end(JSON.stringify(body));
    const topic = /^\/topics\/(.+)$/.exec(url.pathname)?.[1];
    const clientId = /^\/connections\/([^/]+)$/.exec(url.pathname)?.[1];
    if (req.method === 'DELETE' && clientId) return deleteConnection(context, decodeURIComponent(clientId), answer);
    if (req.method !== 'POST' || !topic) return answer(404, { message: 'Not found' });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => publishFromApi(context.broker(), url, decodeURIComponent(topic), Buffer.concat(chunks), answer));
  });

/** Starts the broker, its TLS listener and the data-plane Publish API; see the file's comment. */
export const startMqttBroker = async (options: MqttBrokerOptions): Promise<MqttBroker> => {
  const region = options.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const applyRules = ruleRunner(topicRules(options));
  const context: BrokerContext = {
    options,
    sessions: new WeakMap<Client, Session>(),
    arn: `arn:aws:iot:${region}:000000000000`,
    functionArn: `arn:aws:lambda:${region}:000000000000:function:mqtt-authorizer`,
    viaWebSocket: (conn) => Boolean(web?.streams.has(conn as never)),
    applyRules,
    broker: () => broker,
  };
  let web: MqttWebSocketListener | undefined;
  const broker = await Aedes.createBroker(brokerHooks(context));
  trackPresence(broker, context);

  // Sockets are tracked so that stopping ends them: a server's close waits for every connection.
  const sockets = new Set<Socket>();
  const accept = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    broker.handle(socket);
  };
  const plain = createTcpServer(accept);
  const secure = createTlsServer({ key: options.tls.key, cert: options.tls.cert, minVersion: 'TLSv1.2' }, accept);
  const dataPlane = dataPlaneServer(context);
  if (options.wsPort !== undefined) web = mqttWebSocketListener((stream) => broker.handle(stream));

  let ports: number[];
  try {
    ports = [await listen(plain, options.port), await listen(secure, options.tlsPort), await listen(dataPlane, options.dataPlanePort)];
    if (web) ports.push(await listen(web.server, options.wsPort!));
  } catch (error) {
    // A port in use: nothing of this broker may stay open.
    for (const server of [plain, secure, dataPlane, ...(web ? [web.server] : [])]) if (server.listening) server.close();
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw error;
  }
  const [port, tlsPort, dataPlanePort, wsPort] = ports;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    tlsUrl: `mqtts://127.0.0.1:${tlsPort}`,
    dataPlaneEndpoint: `http://127.0.0.1:${dataPlanePort}`,
    wsUrl: wsPort ? `ws://127.0.0.1:${wsPort}/mqtt` : '',
    broker,
    stop: async () => {
      dataPlane.closeAllConnections();
      const closing = [close(plain), close(secure), close(dataPlane), ...(web ? [web.close()] : [])];
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await Promise.all(closing);
    },
  };
};
