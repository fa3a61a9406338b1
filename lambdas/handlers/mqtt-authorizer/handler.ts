import type { Context } from 'aws-lambda';
import { authorizeMqttConnect } from '../../domain/doors/device-mqtt';
import { forwardAndLog } from '../../domain/webhooks/events';
import { iotArnBase, mqttCredentialsOf } from '../../schemas/iot-authorizer';
import { registryDb } from '../../shared/clients';
import { publishMetrics } from '../../shared/metrics';

/**
 * The IoT Core custom authorizer of the MQTT door (and of the local broker): client ID = username
 * = device ID, password = the device JWT, checked as the HTTPS door checks it; the answer carries
 * the device's own policy.
 */
export const handler = async (event: unknown, context: Pick<Context, 'invokedFunctionArn'>) => {
  try {
    return await authorizeMqttConnect(registryDb(), forwardAndLog(registryDb()), mqttCredentialsOf(event), iotArnBase(context));
  } finally {
    publishMetrics(); // a refused token is counted (DeviceAuthenticationFailures)
  }
};
