import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_IOT_DATA_PLANE, as for
// the devices' channel (stores/device-channel.ts).
let client: IoTDataPlaneClient | undefined;

/**
 * Publishes a JSON message to the open consoles on `topic` at QoS 0 through the IoT data plane: a
 * console that is not connected misses it and reads the page again when it reconnects.
 */
export const publishToConsoles = async (topic: string, message: unknown) => {
  client ??= new IoTDataPlaneClient({});
  await client.send(new PublishCommand({ topic, qos: 0, payload: Buffer.from(JSON.stringify(message)) }));
};
