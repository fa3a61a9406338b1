import { X509Certificate } from 'node:crypto';
import type { IotDoor } from './iot-door';
import { IOT_CORE_MQTTS_PORT } from './iot-core';

/** A value of the template as it works here, given the function's own IAM proxy endpoints. */
export type Localize = (value: string, endpoints?: Record<string, string>) => string;

/**
 * A value of the template as it works here: the API's address is the local gateway's; the
 * devices' broker address (IoT Core's port 8883 on the domain) is the local broker's TLS port;
 * the consoles' MQTT over WebSocket address (`wss://<the console domain>/mqtt`, config.json's
 * `liveUrl`) is the broker's WebSocket listener;
 * the data endpoint is the function's own IAM proxy of the data plane; Amazon Root CA 1, which
 * signs IoT Core's AWS-managed domains, is the local broker's CA.
 */
export const localizer =
  ({ cloudApiUrl, localApiUrl }: { cloudApiUrl: string; localApiUrl: string }, { tls, mqttHost, dataHost, consoleHost, urls }: IotDoor): Localize =>
  (value, endpoints = {}) => {
    let out = value.replaceAll(cloudApiUrl, localApiUrl);
    if (!tls) return out;
    out = out.replaceAll(`mqtts://${mqttHost}:${IOT_CORE_MQTTS_PORT}`, urls.tlsUrl);
    if (urls.wsUrl) out = out.replaceAll(`wss://${consoleHost}/mqtt`, urls.wsUrl);
    if (endpoints.iotdata) out = out.replaceAll(`https://${dataHost}`, endpoints.iotdata);
    return isAmazonRootCa1(out) ? tls.caCert : out;
  };

/** Whether a value is the PEM of Amazon Root CA 1, the CA of IoT Core's AWS-managed domains. */
const isAmazonRootCa1 = (value: string) => {
  if (!value.startsWith('-----BEGIN CERTIFICATE-----')) return false;
  try {
    return new X509Certificate(value).subject.split('\n').includes('CN=Amazon Root CA 1');
  } catch {
    return false;
  }
};
