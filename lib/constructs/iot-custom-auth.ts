import { Aws, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { CfnAuthorizer, CfnDomainConfiguration } from 'aws-cdk-lib/aws-iot';
import type { Construct } from 'constructs';
import type { HandlerFunction } from './handler-function';

/** An IoT Core domain whose clients all meet one custom authorizer (the devices' door, the consoles' door). */
export interface CustomAuthDomainProps {
  authorizer: HandlerFunction;
  /** `<stack>-<suffix>`: the domain configuration's name. */
  suffix: string;
  applicationProtocol: 'SECURE_MQTT' | 'MQTT_WSS';
  /** The custom resource's role that reads the domain's name (lambdas/iot-endpoints). */
  endpointsReader: HandlerFunction;
}

/**
 * A custom authorizer whose Lambda checks the password itself (no token signing by IoT Core), the
 * permission for IoT Core to invoke it, and a domain configuration that names it as the only
 * authorizer (clients cannot override it); the endpoints reader may describe the domain.
 * Made in `scope` as `Authorizer` and `Domain`.
 */
export const customAuthDomain = (scope: Construct, props: CustomAuthDomainProps) => {
  const authorizer = new CfnAuthorizer(scope, 'Authorizer', {
    authorizerFunctionArn: props.authorizer.functionArn,
    signingDisabled: true,
    status: 'ACTIVE',
    enableCachingForHttp: false,
  });
  props.authorizer.addPermission('InvokedByIotCore', {
    principal: new ServicePrincipal('iot.amazonaws.com'),
    sourceArn: authorizer.attrArn,
    sourceAccount: Aws.ACCOUNT_ID,
  });
  const domain = new CfnDomainConfiguration(scope, 'Domain', {
    domainConfigurationName: `${Stack.of(scope).stackName}-${props.suffix}`,
    serviceType: 'DATA',
    applicationProtocol: props.applicationProtocol,
    authenticationType: 'CUSTOM_AUTH',
    authorizerConfig: { defaultAuthorizerName: authorizer.ref, allowAuthorizerOverride: false },
    tlsConfig: { securityPolicy: 'IoTSecurityPolicy_TLS13_1_2_2022_10' },
    domainConfigurationStatus: 'ENABLED',
  });
  props.endpointsReader.addToRolePolicy(new PolicyStatement({ actions: ['iot:DescribeDomainConfiguration'], resources: [domain.attrArn] }));
  return { authorizer, domain };
};
