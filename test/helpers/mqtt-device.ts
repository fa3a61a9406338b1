import mqtt, { type MqttClient } from 'mqtt';
import { until } from '../../local/ports';
import { deviceToken, type DeviceTokenOptions } from './device-token';

/** A credentials document (zdevice.json) as the identities route hands it out. */
export interface Credentials {
  devinfo: { device_id: string; key_id: string; mode: string; key_type: string };
  prvkey: string;
  endpoint: { host: string; port: number; mode: string; url: string };
  cacert?: string;
}

/** A message the device got on `j/dn/<id>`. */
export interface DownMessage {
  key: string;
  value: any;
}

export interface MqttDevice {
  client: MqttClient;
  /** Everything received on `j/dn`, in order. */
  received: DownMessage[];
  /** Publishes `{key, value}` on `j/up/<id>` (QoS 1). */
  up: (key: string, value: unknown) => Promise<void>;
  /** Publishes a raw payload on `j/data/<id>/<tag>` (QoS 1). */
  data: (tag: string, payload: unknown) => Promise<void>;
  /** Waits for a `j/dn` message with this key (the n-th one, from 1). */
  next: (key: string, nth?: number) => Promise<DownMessage>;
  end: () => Promise<void>;
}

export interface ConnectOptions {
  token?: string;
  tokenOptions?: DeviceTokenOptions;
  clientId?: string;
  username?: string;
  /** Overrides the credentials' endpoint (e.g. the plain port). */
  url?: string;
  /** Subscribe to `j/dn/<id>` after connecting, as device clients do (default true). */
  subscribe?: boolean;
}

/**
 * Connects as the contract's device clients do (spec/device-mqtt.md), from the credentials file
 * alone: client ID = username = device ID, a device JWT as password, MQTT 3.1.1, clean session,
 * keepalive 60 s, TLS with the credentials' `cacert` and a hostname check when `mode` is
 * `secure`; then subscribes to `j/dn/<id>` at QoS 1. Rejects with the CONNACK refusal.
 */
export const connectDevice = async (credentials: Credentials, options: ConnectOptions = {}): Promise<MqttDevice> => {
  const id = credentials.devinfo.device_id;
  const secure = credentials.endpoint.mode === 'secure';
  const url = options.url ?? `${secure ? 'mqtts' : 'mqtt'}://${credentials.endpoint.host}:${credentials.endpoint.port}`;
  const client = mqtt.connect(url, {
    clientId: options.clientId ?? id,
    username: options.username ?? id,
    password: options.token ?? (await deviceToken(credentials, options.tokenOptions)),
    protocolVersion: 4,
    clean: true,
    keepalive: 60,
    reconnectPeriod: 0,
    connectTimeout: 30_000, // a cold authorizer on a loaded machine: a refusal still answers at once
    ...(url.startsWith('mqtts') ? { ca: credentials.cacert, rejectUnauthorized: true } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', (error) => {
      client.end(true);
      reject(error);
    });
  });
  const received: DownMessage[] = [];
  client.on('message', (topic, payload) => {
    if (topic === `j/dn/${id}`) received.push(JSON.parse(payload.toString('utf8')) as DownMessage);
  });
  if (options.subscribe ?? true) await client.subscribeAsync(`j/dn/${id}`, { qos: 1 });
  const device: MqttDevice = {
    client,
    received,
    up: async (key, value) => {
      await client.publishAsync(`j/up/${id}`, JSON.stringify({ key, value }), { qos: 1 });
    },
    data: async (tag, payload) => {
      await client.publishAsync(`j/data/${id}/${tag}`, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos: 1 });
    },
    next: async (key, nth = 1) => {
      let found: DownMessage | undefined;
      await until(() => (found = received.filter((m) => m.key === key)[nth - 1]) !== undefined, `j/dn message ${key} #${nth} for ${id}`, 20_000);
      return found!;
    },
    end: () => client.endAsync(),
  };
  return device;
};
