/**
 * THE topic rules of the MQTT door, as data: the stack makes each row an IoT Core topic rule
 * (SQL, an SQS action into the row's queue, an error action to that queue's DLQ) and both local
 * runtimes evaluate the same SQL on what the broker's clients publish, so the two cannot
 * disagree. No CDK or engine import here.
 */

/** One topic rule: what it selects, and where its SQS action sends it. */
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
}

// `encode(*, 'base64')` carries any payload, JSON or not: a malformed publish still reaches the
// handler, which drops and logs it, rather than failing in the rule. The device is the topic's
// third level, and the rule acts only when it is the publishing client (`clientid()`): the device
// policy already keeps a client to its own topics, and the rule does not take the topic's word
// for it should a policy ever allow more.
const devicePublishSql = (topicFilter: string) =>
  `SELECT encode(*, 'base64') AS payload, topic() AS topic, timestamp() AS received_at, clientid() AS client_id FROM '${topicFilter}' WHERE clientid() = topic(3)`;

export const MQTT_RULES: readonly MqttRule[] = [
  { name: 'device_data', topicFilter: 'j/data/+/+', sql: devicePublishSql('j/data/+/+'), queue: 'ingest' },
  { name: 'device_up', topicFilter: 'j/up/+', sql: devicePublishSql('j/up/+'), queue: 'mqtt' },
  {
    // IoT Core publishes these lifecycle events itself; the local broker publishes the same JSON.
    // Every client's, the consoles' (`console-…`, over WebSocket) too: only a device's (`dev-…`,
    // the topic's fifth level) reaches the queue, so a console costs no message, no invocation and
    // no registry lookup.
    name: 'device_presence',
    topicFilter: '$aws/events/presence/+/+',
    sql: "SELECT *, topic() AS topic FROM '$aws/events/presence/+/+' WHERE startswith(topic(5), 'dev-')",
    queue: 'mqtt',
  },
];
