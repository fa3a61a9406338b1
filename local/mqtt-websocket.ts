import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocketServer } from 'ws';

/**
 * MQTT over WebSocket on 127.0.0.1, path `/mqtt` (subprotocol `mqtt`), as IoT Core serves it on
 * 443: each connection's stream is handed to the broker, marked so the broker knows it came this
 * way (the console's door: its own authorizer, as the console's domain configuration has on AWS).
 */
export interface MqttWebSocketListener {
  server: Server;
  /** The streams of the connections that came in over WebSocket. */
  streams: WeakSet<Duplex>;
  /** Ends every WebSocket connection, then the listener. */
  close: () => Promise<void>;
}

export const mqttWebSocketListener = (handle: (stream: Duplex) => void): MqttWebSocketListener => {
  const server = createServer((_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket: connect to /mqtt'));
  const wss = new WebSocketServer({
    server,
    path: '/mqtt',
    // MQTT clients offer `mqtt` (3.1.1, 5) or `mqttv3.1`; IoT Core answers `mqtt`.
    handleProtocols: (protocols) => (protocols.has('mqtt') ? 'mqtt' : ([...protocols][0] ?? false)),
  });
  const streams = new WeakSet<Duplex>();
  wss.on('connection', (socket) => {
    const stream = createWebSocketStream(socket);
    stream.on('error', () => socket.terminate());
    streams.add(stream);
    handle(stream);
  });
  return {
    server,
    streams,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
