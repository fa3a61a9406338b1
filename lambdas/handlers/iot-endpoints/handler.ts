import { DescribeDomainConfigurationCommand, DescribeEndpointCommand, IoTClient } from '@aws-sdk/client-iot';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { logger } from '../../shared/logger';

const iot = new IoTClient({});

/**
 * A CloudFormation custom resource that reads what IoT Core does not expose as attributes: the
 * domain name of the devices' domain configuration (an AWS-managed domain) and the account's
 * data-plane endpoint (`iot:Data-ATS`, where Lambdas publish to devices). It changes nothing.
 */
export const handler = async (event: CloudFormationCustomResourceEvent) => {
  const physicalId = `iot-endpoints-${String(event.ResourceProperties.DomainConfigurationName)}`;
  let status: 'SUCCESS' | 'FAILED' = 'SUCCESS';
  let reason = '';
  let data: Record<string, string> = {};
  try {
    if (event.RequestType !== 'Delete') {
      const [domain, endpoint] = await Promise.all([
        iot.send(new DescribeDomainConfigurationCommand({ domainConfigurationName: String(event.ResourceProperties.DomainConfigurationName) })),
        iot.send(new DescribeEndpointCommand({ endpointType: 'iot:Data-ATS' })),
      ]);
      data = { DomainName: domain.domainName ?? '', DataEndpoint: endpoint.endpointAddress ?? '' };
    }
  } catch (error) {
    logger.error('describing the IoT endpoints failed', { error: error as Error });
    status = 'FAILED';
    reason = (error as Error).message;
  }
  // CloudFormation waits for this answer at the pre-signed ResponseURL.
  const response = await fetch(event.ResponseURL, {
    method: 'PUT',
    headers: { 'content-type': '' },
    body: JSON.stringify({
      Status: status,
      Reason: reason || `see the log stream of ${process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'this function'}`,
      PhysicalResourceId: physicalId,
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
      Data: data,
    }),
  });
  if (!response.ok) throw new Error(`CloudFormation refused the answer: ${response.status}`);
};
