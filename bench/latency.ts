/**
 * End-to-end latency on `npm start`: from a device's MQTT publish of a data point to a webhook's
 * receipt of it, p50 and p99, with DEVICES devices publishing POINTS points each at RATE points/s
 * in all (the broker's rule → MQTT queue → device-mqtt → ingest queue → store → forward queue →
 * forwarder → POST). The runtime is `npm start`'s own entry point in a child process (in memory,
 * free ports); the devices and the receiver run here.
 *
 *   npm run bench:latency           DEVICES=20 POINTS=50 RATE=100
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fleetstreamArgs } from '../test/helpers/cli';
import { connectDevice, type Credentials, type MqttDevice } from '../test/helpers/mqtt-device';
import { startWebhookReceiver } from '../test/helpers/webhook-receiver';
import { until } from '../local/ports';
import { printTable } from './stats';

const DEVICES = Number(process.env.DEVICES ?? 20);
const POINTS = Number(process.env.POINTS ?? 50);
const RATE = Number(process.env.RATE ?? 100);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const main = async () => {
  const child = spawn(process.execPath, fleetstreamArgs('start', ['--in-memory']), {
    env: { ...process.env, PORT: '0', MQTT_PORT: '0', MQTTS_PORT: '0', POWERTOOLS_LOG_LEVEL: 'WARN' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ base_url: string; api_key: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('READY ') && resolve(JSON.parse(line.slice(6))));
  });
  const receiver = await startWebhookReceiver();
  const arrivals = new Map<string, number>();
  const devices: MqttDevice[] = [];
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${ready.base_url}${path}`, {
        method,
        headers: { 'x-api-key': ready.api_key, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as any;
    };
    const { workspace } = await call('POST', '/workspaces', { name: 'latency' });
    await call('POST', `/workspaces/${workspace.id}/integrations`, { name: 'latency', url: receiver.url, data: true, events: false });
    for (let i = 0; i < DEVICES; i++) {
      const { device } = await call('POST', `/workspaces/${workspace.id}/devices`, { name: `d${i}` });
      const { credentials } = await call('POST', `/workspaces/${workspace.id}/devices/${device.id}/identities`);
      devices.push(await connectDevice(credentials as Credentials));
    }
    // The receiver's own clock stamps each point's arrival; the publish time travels in the payload.
    const seen = () => {
      for (const post of receiver.posts)
        for (const e of post.body.result) {
          const key = String((e.payload as { id?: string })?.id);
          if (!arrivals.has(key)) arrivals.set(key, post.receivedAt);
        }
      return arrivals.size;
    };
    const total = DEVICES * POINTS;
    console.log(`${DEVICES} devices publish ${POINTS} points each, ${RATE} points/s in all, over MQTT (TLS) to npm start…`);
    const sentAt = new Map<string, number>();
    const started = Date.now();
    for (let n = 0; n < total; n++) {
      const due = started + (n * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const id = `p${n}`;
      sentAt.set(id, Date.now());
      void devices[n % DEVICES].data('latency', { id, v: n });
    }
    await until(() => seen() >= total, `${total} points at the webhook`, 300_000);
    const latencies = [...sentAt].map(([id, at]) => arrivals.get(id)! - at).sort((a, b) => a - b);
    printTable(`${total} points, publish → webhook receipt (ms)`, [
      { what: 'latency', p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies.at(-1)! },
    ]);
  } finally {
    await Promise.all(devices.map((d) => d.end()));
    await receiver.stop();
    child.kill('SIGINT');
  }
};

await main();
