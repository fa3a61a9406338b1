import { DeleteConnectionCommand, IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';

/** A message on a device's `j/dn` topic (spec/device-mqtt.md): a key with its prefix, and a JSON value. */
export interface DownMessage {
  key: string;
  value: unknown;
}

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_IOT_DATA_PLANE (the
// account's IoT data endpoint in the stack, the local runtime's stand-in on `npm start`).
let client: IoTDataPlaneClient | undefined;

/** The cloud-to-device topic of a device. */
export const downTopicOf = (deviceId: string) => `j/dn/${deviceId}`;

/**
 * Publishes a message to a device on `j/dn/<device>` at QoS 1 through the IoT data plane. A device
 * that is not connected does not get it (sessions are clean): what it must not miss it gets in
 * the answer to its next `#status`.
 */
export const publishToDevice = async (deviceId: string, message: DownMessage) => {
  client ??= new IoTDataPlaneClient({});
  await client.send(new PublishCommand({ topic: downTopicOf(deviceId), qos: 1, payload: Buffer.from(JSON.stringify(message)) }));
};

/**
 * Closes a device's MQTT connection (client ID = device ID) through the IoT data plane's
 * DeleteConnection, as IoT Core's lifecycle events then report (`API_INITIATED_DISCONNECT`).
 * @returns whether a connection was open (IoT Core answers ResourceNotFoundException when not).
 */
export const disconnectDevice = async (deviceId: string): Promise<boolean> => {
  client ??= new IoTDataPlaneClient({});
  try {
    await client.send(new DeleteConnectionCommand({ clientId: deviceId }));
    return true;
  } catch (error) {
    if ((error as { name?: string }).name === 'ResourceNotFoundException') return false;
    throw error;
  }
};
