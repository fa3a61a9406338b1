import type { MqttClient } from 'mqtt';

/**
 * The console's live updates (docs/console.md, "Live updates"): one MQTT over WebSocket connection
 * to IoT Core (the broker's WebSocket listener on `npm start`) as the signed-in user, for the
 * workspace on screen, receiving `fleetstream/console/<workspace>/<kind>`. The `mqtt` library is
 * loaded only when a page first asks (a chunk of its own, outside the first load). A lost
 * connection is retried with a growing delay (1 s … 30 s, with jitter), each time with a fresh
 * access token; switching workspace connects again for the new one (the authorizer grants one).
 */

export type LiveKind = 'connection' | 'data' | 'rollout' | 'webhook' | 'export' | 'alarm';

/** `off`: no live address (or signed out); `connecting`: the first attempt; `live`; `lost`: retrying. */
export type LiveState = 'off' | 'connecting' | 'live' | 'lost';

/** A device connected or disconnected. */
export interface ConnectionMessage {
  device_id: string;
  fleet_id: string;
  connected: boolean;
  at: string;
}
/** A device's new points of one ingest batch. */
export interface DataMessage {
  device_id: string;
  fleet_id: string;
  tags: string[];
  last_at: string;
  count: number;
}
/** A rollout's counts moved. */
export interface RolloutMessage {
  rollout_id: string;
  at: string;
}
/** An integration's delivery status was written. */
export interface WebhookMessage {
  integration_id: string;
  ok: boolean;
  at: string;
  error?: string;
}
/** An export's progress was written (a part), or it ended. */
export interface ExportMessage {
  export_id: string;
  status: 'running' | 'ready' | 'failed';
  points_written: number;
  at: string;
}
/** An alarm opened, was acknowledged or closed. */
export interface AlarmMessage {
  alarm_id: string;
  rule_id: string;
  device_id: string;
  fleet_id: string;
  event: 'opened' | 'acknowledged' | 'closed';
  status: 'open' | 'acknowledged' | 'closed';
  severity: string;
  at: string;
}
export interface LiveMessages {
  alarm: AlarmMessage;
  connection: ConnectionMessage;
  data: DataMessage;
  rollout: RolloutMessage;
  webhook: WebhookMessage;
  export: ExportMessage;
}

/** A subscriber: a message, or `undefined` when messages may have been missed (a reconnection): read again. */
export type LiveHandler<K extends LiveKind> = (message: LiveMessages[K] | undefined) => void;

export interface LiveSettings {
  /** `wss://…/mqtt` (config.json `liveUrl`). */
  url: string;
  /** The signed-in user's access token, refreshed when about to end. */
  token: () => Promise<string>;
}

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** How long the connection stays open with no page listening (a page change re-subscribes within it). */
const IDLE_CLOSE_MS = 15_000;

const topicOf = (workspaceId: string, kind: LiveKind) => `fleetstream/console/${workspaceId}/${kind}`;

let settings: LiveSettings | undefined;
let state: LiveState = 'off';
let client: MqttClient | undefined;
/** The workspace of the connection, open, opening or waiting to retry. */
let clientWorkspace: string | undefined;
let attempt = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let idleTimer: ReturnType<typeof setTimeout> | undefined;
/** Bumped at each (re)connection plan: a late answer of an older attempt is dropped. */
let generation = 0;
let everConnected = false;
const handlers = new Map<string, Set<LiveHandler<LiveKind>>>();
const stateListeners = new Set<(state: LiveState) => void>();

const setState = (next: LiveState) => {
  if (state === next) return;
  state = next;
  for (const listener of stateListeners) listener(next);
};

/** The connection's state, and its changes (the header shows it). */
export const liveState = {
  get current(): LiveState {
    return state;
  },
  subscribe(listener: (state: LiveState) => void): () => void {
    stateListeners.add(listener);
    return () => stateListeners.delete(listener);
  },
};

/** The workspace the pages listen to now (the last one subscribed to), if any. */
const wantedWorkspace = () => {
  let last: string | undefined;
  for (const [key, set] of handlers) if (set.size) last = key.split('|')[0];
  return last;
};

const kindsOf = (workspaceId: string) =>
  [...handlers].filter(([key, set]) => set.size && key.startsWith(`${workspaceId}|`)).map(([key]) => key.split('|')[1] as LiveKind);

const closeClient = () => {
  generation += 1;
  clearTimeout(retryTimer);
  retryTimer = undefined;
  client?.end(true);
  client = undefined;
};

const scheduleRetry = () => {
  clearTimeout(retryTimer);
  const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** attempt) * (0.75 + Math.random() * 0.5);
  attempt += 1;
  retryTimer = setTimeout(() => void connect(), delay);
};

/** Tells the workspace's subscribers they may have missed messages. */
const resync = (workspaceId: string) => {
  for (const [key, set] of handlers) if (key.startsWith(`${workspaceId}|`)) for (const h of set) h(undefined);
};

const connect = async () => {
  const workspaceId = wantedWorkspace();
  closeClient();
  clientWorkspace = workspaceId;
  if (!settings || !workspaceId) {
    setState('off');
    return;
  }
  const mine = generation;
  setState(everConnected || attempt > 0 ? 'lost' : 'connecting');
  try {
    const [{ default: mqtt }, token] = await Promise.all([import('mqtt'), settings.token()]);
    if (mine !== generation) return;
    const random = crypto.getRandomValues(new Uint8Array(12));
    const clientId = `console-${Array.from(random, (b) => b.toString(16).padStart(2, '0')).join('')}`;
    const next = mqtt.connect(settings.url, {
      clientId,
      username: workspaceId,
      password: token,
      protocolVersion: 4,
      clean: true,
      keepalive: 60,
      // reconnections are this module's: each with a fresh token
      reconnectPeriod: 0,
      // plain timers: the library's worker timers would need a blob: worker the CSP refuses
      timerVariant: 'native',
      connectTimeout: 10_000,
    });
    client = next;
    next.on('connect', () => {
      if (mine !== generation) return;
      // Live once the broker has the subscriptions: a page that reads again before then could miss
      // a change made between its read and the SUBACK.
      const live = () => {
        if (mine !== generation) return;
        const again = everConnected;
        everConnected = true;
        attempt = 0;
        setState('live');
        // what happened while it was down is read again by the pages
        if (again) resync(workspaceId);
      };
      const kinds = kindsOf(workspaceId);
      if (!kinds.length) return live();
      // a refused subscription ends the connection: the close retries it
      next.subscribe(
        kinds.map((k) => topicOf(workspaceId, k)),
        (error) => (error ? next.end(true) : live()),
      );
    });
    next.on('message', (topic, payload) => {
      const [, , ws, kind] = topic.split('/');
      let message: unknown;
      try {
        message = JSON.parse(new TextDecoder().decode(payload));
      } catch {
        return;
      }
      for (const h of handlers.get(`${ws}|${kind}`) ?? []) h(message as never);
    });
    next.on('close', () => {
      if (mine !== generation) return;
      closeClient();
      setState('lost');
      scheduleRetry();
    });
    next.on('error', () => undefined); // a close follows
  } catch {
    if (mine !== generation) return;
    setState('lost');
    scheduleRetry();
  }
};

/** Connects (again) when the pages' workspace is not the connection's; subscribes a new kind on an open connection. */
const follow = (workspaceId: string, kind: LiveKind) => {
  clearTimeout(idleTimer);
  if (!settings) return;
  if (clientWorkspace === workspaceId) {
    if (client?.connected) client.subscribe(topicOf(workspaceId, kind));
    return;
  }
  attempt = 0;
  void connect();
};

/**
 * Calls `onMessage` with each message of `kind` in `workspaceId` while subscribed, and with
 * `undefined` after a reconnection (messages may have been missed: read again).
 * @returns the unsubscribe
 */
export const subscribeLive = <K extends LiveKind>(workspaceId: string, kind: K, onMessage: LiveHandler<K>): (() => void) => {
  const key = `${workspaceId}|${kind}`;
  const set = handlers.get(key) ?? new Set();
  handlers.set(key, set);
  // the newest subscription's workspace comes last in the map's order
  handlers.delete(key);
  handlers.set(key, set);
  set.add(onMessage as LiveHandler<LiveKind>);
  follow(workspaceId, kind);
  return () => {
    set.delete(onMessage as LiveHandler<LiveKind>);
    if (set.size) return;
    handlers.delete(key);
    // The topic stays subscribed while the connection lasts (a page coming back finds it; mqtt.js
    // would drop a subscribe sent before the unsubscribe's answer): unheard messages are dropped.
    if (!wantedWorkspace()) {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        if (wantedWorkspace()) return;
        closeClient();
        clientWorkspace = undefined;
        setState('off');
        everConnected = false;
      }, IDLE_CLOSE_MS);
    }
  };
};

/** Sets (or, signed out or without a live address, clears) where and as whom to connect. */
export const configureLive = (next: LiveSettings | undefined) => {
  settings = next;
  attempt = 0;
  everConnected = false;
  closeClient();
  clientWorkspace = undefined;
  setState('off');
  if (next && wantedWorkspace()) void connect();
};

// A browser back online tries at once rather than at the end of its delay.
(globalThis as { addEventListener?: (type: string, listener: () => void) => void }).addEventListener?.('online', () => {
  if (settings && state === 'lost') {
    attempt = 0;
    void connect();
  }
});

/** A device (or any row with its connection fields) as a `connection` message leaves it; another device's row unchanged. */
export const withConnection = <D extends { id: string; connected?: boolean; last_connected_at?: string | null; last_disconnected_at?: string | null }>(
  device: D,
  message: ConnectionMessage,
): D =>
  device.id !== message.device_id
    ? device
    : { ...device, connected: message.connected, ...(message.connected ? { last_connected_at: message.at } : { last_disconnected_at: message.at }) };
