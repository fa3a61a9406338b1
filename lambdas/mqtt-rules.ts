/**
 * THE topic rules of the MQTT door, as data: the stack makes each row an IoT Core topic rule
 * (SQL, an SQS action into the row's queue, an error action to that queue's DLQ) and the local
 * broker applies the same rows to what its clients publish, building the same message with
 * `message`, so the two cannot disagree. No CDK or engine import here.
 */

/** One topic rule: what it selects, and the message its SQS action sends. */
export interface MqttRule {
  /** The rule's name (IoT Core: letters, digits and underscores). */
  name: string;
  /** MQTT topic filter of the rule's FROM clause. */
  topicFilter: string;
  /** The IoT SQL statement (2016-03-23 SQL version). */
  sql: string;
  /**
   * The queue its SQS action sends to: data publishes straight to the ingest queue, whose
   * consumer stores and forwards them in batches (one SQS message a publish, no second hop);
   * `j/up` and presence to the MQTT queue, whose small batches answer requests quickly.
   */
  queue: 'ingest' | 'mqtt';
  /**
   * The SQS message the rule sends for a publish on `topic`, as IoT Core builds it from the SQL
   * (the local broker calls this). `payload` is the MQTT payload, `receivedAt` Unix milliseconds.
   */
  message: (topic: string, payload: Buffer, receivedAt: number) => Record<string, unknown>;
}

// `encode(*, 'base64')` carries any payload, JSON or not: a malformed publish still reaches the
// handler, which drops and logs it, rather than failing in the rule.
const devicePublish = (topic: string, payload: Buffer, receivedAt: number) => ({
  payload: payload.toString('base64'),
  topic,
  received_at: receivedAt,
});

export const MQTT_RULES: readonly MqttRule[] = [
  {
    name: 'device_data',
    topicFilter: 'j/data/+/+',
    sql: "SELECT encode(*, 'base64') AS payload, topic() AS topic, timestamp() AS received_at FROM 'j/data/+/+'",
    queue: 'ingest',
    message: devicePublish,
  },
  {
    name: 'device_up',
    topicFilter: 'j/up/+',
    sql: "SELECT encode(*, 'base64') AS payload, topic() AS topic, timestamp() AS received_at FROM 'j/up/+'",
    queue: 'mqtt',
    message: devicePublish,
  },
  {
    // IoT Core publishes these lifecycle events itself; the local broker publishes the same JSON.
    name: 'device_presence',
    topicFilter: '$aws/events/presence/+/+',
    sql: "SELECT *, topic() AS topic FROM '$aws/events/presence/+/+'",
    queue: 'mqtt',
    message: (topic, payload) => ({ ...(JSON.parse(payload.toString('utf8')) as Record<string, unknown>), topic }),
  },
];
