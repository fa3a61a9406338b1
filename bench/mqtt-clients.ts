/**
 * The client side of `bench/mqtt.ts --connections-only`, in its own process so that the broker's
 * memory is measured alone: connects every device of the JSON file given as argument (plain MQTT,
 * as device clients do), reports `{connected, seconds}` to the parent, and stays connected until
 * told to stop.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { readFileSync } from 'node:fs';

const [url, file] = process.argv.slice(2);
const devices = JSON.parse(readFileSync(file, 'utf8')) as Array<{ id: string; token: string }>;
const clients: MqttClient[] = [];
const started = performance.now();
const BATCH = 200;
for (let i = 0; i < devices.length; i += BATCH) {
  clients.push(
    ...(await Promise.all(
      devices.slice(i, i + BATCH).map(
        ({ id, token }) =>
          new Promise<MqttClient>((resolve, reject) => {
            const client = mqtt.connect(url, {
              clientId: id,
              username: id,
              password: token,
              protocolVersion: 4,
              clean: true,
              keepalive: 60,
              reconnectPeriod: 0,
              connectTimeout: 60_000,
            });
            client.once('connect', () => client.subscribe(`j/dn/${id}`, { qos: 1 }, () => resolve(client)));
            client.once('error', reject);
          }),
      ),
    )),
  );
}
process.send!({ connected: clients.length, seconds: (performance.now() - started) / 1000 });
process.on('message', () => {
  for (const c of clients) c.end(true);
  process.exit(0);
});
