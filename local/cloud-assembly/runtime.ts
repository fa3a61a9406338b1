import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  UpdateTableCommand,
  type CreateTableCommandInput,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayAuthorizerResult, APIGatewayProxyResult } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { startLocalCognito, TriggerInvokeRefusedError, type LocalCognito } from '../cognito-local';
import { consoleSite } from '../console-site';
import { startApiGateway, type GatewayAuthorizer, type GatewayResponse, type GatewayResponseType, type GatewayRoute } from '../api-gateway';
import { LOCAL_AWS_ENV, startDynamoDbLocal } from '../dynamodb-local';
import { localAwsLambda, type ResponseStream } from '../lambda-streaming';
import { brokerTls, startMqttBroker, type BrokerTls } from '../mqtt-broker';
import type { IotAuthorizerResult } from '../../lambdas/domain/doors/device-mqtt';
import type { ConsoleConfig } from '../../console/src/lib/config';
import { holdPort } from '../ports';
import type { QueueName, QueueSettings } from '../../lambdas/queues';
import { bootstrap, ensureFirstUser, type LocalRuntime, type LocalRuntimeOptions } from '../runtime';
import { ensureIndexes, ensureTimeToLive } from '../dynamodb-local';
import { startDynamoDbStreamPoller } from '../dynamodb-stream-poller';
import { startSchedule, type RunningSchedule } from '../scheduler';
import { startSqsPoller } from '../sqs-poller';
import { startLocalS3, type CorsRule } from '../s3-engine';
import { deployBuckets } from './bucket-deployments';
import { userPoolOf, type UserPoolTriggerSpec } from './cognito';
import { createCustomResources, customResourcesOf, providerOf } from './custom-resources';
import { eventFilterOf } from './event-filter';
import { scheduledRulesOf } from './events';
import { startXrayDaemon, type ReceivedTrace } from './xray-daemon';
import { brokerRuleOf, IOT_CORE_MQTTS_PORT, iotAuthorizerOf, startIotControlPlane, topicRulesOf, type TopicRuleSpec } from './iot-core';
import { ENDPOINT_VARIABLES, localStreamArn, startRecordingProxy, unusedGrants, wildcardMatch, type CallRecord, type PolicyStatement } from './iam';
import { LocalLambda } from './lambda-host';
import { synthesize } from './synth';
import { functionsIn, readAssembly, resolver, resourcesOfType, targetOf, type AssemblyStack, type CfnResource, type Physical, type Pseudo } from './template';

/** What the cloud-assembly runtime is started with: the local runtime's options, and the assembly. */
export interface CloudAssemblyOptions extends LocalRuntimeOptions {
  /** A synthesized cloud assembly (`cdk.out`); synthesized into a temporary folder when absent. */
  assemblyDir?: string;
  /** Where the IAM report (every call, the refused ones, the grants never used) is written at stop. */
  reportFile?: string;
}

/** What ran from the template, and what IAM said about each AWS call. */
export interface CloudAssemblyReport {
  stack: string;
  routes: number;
  functions: string[];
  /** Functions whose bundle failed to load, with the runtime's error. */
  initErrors: string[];
  eventSourceMappings: number;
  /** The AWS::IoT::TopicRule resources the broker runs. */
  topicRules: number;
  /** The user pool's Lambda triggers cognito-local calls. */
  userPoolTriggers: number;
  /** The AWS::Events::Rule schedules that invoke functions. */
  scheduledRules: number;
  /** What a service may not invoke, as the template's AWS::Lambda::Permissions say: those calls fail. */
  invokeRefusals: string[];
  calls: number;
  refused: CallRecord[];
  /** `function action resource` of each Allow no call used. */
  unused: string[];
  /** What each function with X-Ray active tracing sent its daemon. */
  traces: Record<string, ReceivedTrace>;
}

export interface CloudAssemblyRuntime extends LocalRuntime {
  /** The broker standing in for the template's IoT Core door; empty when the template has none. */
  mqtt_url: string;
  mqtts_url: string;
  /** The calls recorded so far, and what was granted but unused; final once stopped. */
  report: () => CloudAssemblyReport;
}

const ACCOUNT = '000000000000'; // fauxqs's account, so that its queue ARNs are the template's
// The console's distribution's domain here: of the reserved `.invalid` domain, as nothing serves it.
const CONSOLE_DOMAIN = 'console.cloud-assembly.invalid';
const API_ID = 'local';
// The handler key of a route whose function API Gateway may not invoke.
const NO_PERMISSION = 'no-permission:';

/**
 * Runs a synthesized stack as its template says, on the local engines: each AWS::DynamoDB::Table
 * and AWS::SQS::Queue created as declared (keys, indexes, redrive policies), each AWS::S3::Bucket
 * in the local S3 with its CORS rules (presigned URLs a function signs name its IAM proxy, so they
 * are authorized as it when used), each
 * AWS::Lambda::Function run from its bundled asset in its own container with its handler, memory,
 * timeout and resolved environment, the API from the AWS::ApiGateway resources (methods, proxy
 * integrations, streaming, REQUEST authorizers with their identity source and cache TTL, gateway
 * responses, Lambda invoke permissions), every AWS::Lambda::EventSourceMapping, every custom
 * resource (created by its function), and the MQTT door from the IoT Core resources (the broker
 * asks the AWS::IoT::Authorizer's function, runs the AWS::IoT::TopicRules with their roles, serves
 * the data plane's Publish), the console's user pool from the AWS::Cognito resources on cognito-local
 * (its triggers invoke the template's functions, only with cognito-idp's invoke permission), every
 * scheduled AWS::Events::Rule (its `rate(…)`, one run at a time; a function only with events'
 * invoke permission for the rule), and the console and its config.json from the BucketDeployments. Every AWS call a function or a rule makes passes a recording proxy and
 * is checked against its role's policies. Whatever the template forgets (a variable, a permission,
 * a mapping) fails here as on AWS.
 */
export const startCloudAssemblyRuntime = async (options: CloudAssemblyOptions = {}): Promise<CloudAssemblyRuntime> => {
  const log = options.log ?? (() => undefined);
  const stops: Array<() => Promise<void>> = [];
  const calls: CallRecord[] = [];
  let finalReport: CloudAssemblyReport | undefined;
  let makeReport: () => CloudAssemblyReport = () => ({
    stack: '',
    routes: 0,
    functions: [],
    initErrors: [],
    eventSourceMappings: 0,
    topicRules: 0,
    userPoolTriggers: 0,
    scheduledRules: 0,
    invokeRefusals: [],
    calls: 0,
    refused: [],
    unused: [],
    traces: {},
  });
  const stop = async () => {
    finalReport ??= makeReport();
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
    if (options.reportFile) writeFileSync(options.reportFile, `${JSON.stringify(finalReport, null, 2)}\n`);
  };
  try {
    let dir = options.assemblyDir;
    if (!dir) {
      log('synthesizing the app (bundling every handler)…');
      dir = await synthesize();
    }
    const assembly = readAssembly(dir);
    const stack = applyOverrides(assembly, options);
    const { template } = stack;
    log(`running ${assembly.name} from ${dir}`);
    // Read before any engine starts: a pool setting cognito-local cannot honour, or a rule that is
    // not a schedule of a function, stops the start at once.
    const userPool = userPoolOf(template, assembly.name);
    const rules = scheduledRulesOf(template);

    // Apart from the sources' data (other table names, another bootstrap account): a subfolder.
    const dataDir = options.dataDir && join(options.dataDir, 'cloud-assembly');
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    const dynamo = await startDynamoDbLocal({ dataDir: dataDir && join(dataDir, 'dynamodb') });
    stops.push(dynamo.stop);
    const sqs = await startFauxqs({ port: 0, logger: false });
    stops.push(() => sqs.stop());
    // The local S3: fauxqs's, behind the front that checks signatures, expiry and checksums as S3 does.
    const s3 = await startLocalS3({
      engine: sqs.address,
      port: options.s3Port,
      credentials: { [LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID]: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
      dataDir,
    });
    stops.push(s3.stop);

    const region = LOCAL_AWS_ENV.AWS_REGION;
    // The host's own clients (the pollers, the bootstrap) use the local credentials and region.
    Object.assign(process.env, LOCAL_AWS_ENV);
    const pseudo: Pseudo = {
      'AWS::AccountId': ACCOUNT,
      'AWS::Region': region,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': assembly.name,
      'AWS::StackId': `arn:aws:cloudformation:${region}:${ACCOUNT}:stack/${assembly.name}/local`,
    };
    const physical = new Map<string, Physical>();
    const resolve = resolver((id) => physical.get(id) ?? genericPhysical(assembly.name, id, template.Resources[id], region), pseudo);
    const nameOf = (id: string, given: unknown) => (typeof given === 'string' ? given : `${assembly.name}-${id}`);

    // Tables, as declared. A stream's ARN is the engine's (its label), in the deployment's region.
    const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const streams = new Map<string, { engineArn: string; kept: boolean }>();
    for (const [id, table] of resourcesOfType(template, 'AWS::DynamoDB::Table')) {
      const props = table.Properties ?? {};
      const name = nameOf(id, props.TableName);
      const { Table, kept } = await createTable(client, {
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: props.KeySchema,
        AttributeDefinitions: props.AttributeDefinitions,
        ...(props.GlobalSecondaryIndexes
          ? { GlobalSecondaryIndexes: props.GlobalSecondaryIndexes.map(({ ContributorInsightsSpecification: _c, ...g }: Record<string, unknown>) => g) }
          : {}),
        ...(props.LocalSecondaryIndexes ? { LocalSecondaryIndexes: props.LocalSecondaryIndexes } : {}),
        ...(props.StreamSpecification ? { StreamSpecification: { StreamEnabled: true, StreamViewType: props.StreamSpecification.StreamViewType } } : {}),
      });
      // TTL as declared: DynamoDB Local deletes expired items within seconds (DynamoDB within days).
      if (props.TimeToLiveSpecification?.Enabled) await ensureTimeToLive(client, name, String(resolve(props.TimeToLiveSpecification.AttributeName)));
      const arn = `arn:aws:dynamodb:${region}:${ACCOUNT}:table/${name}`;
      const attributes: Record<string, string> = { Arn: arn };
      if (Table.LatestStreamArn && Table.StreamSpecification?.StreamEnabled) {
        attributes.StreamArn = localStreamArn({ region, account: ACCOUNT }, Table.LatestStreamArn);
        streams.set(attributes.StreamArn, { engineArn: Table.LatestStreamArn, kept });
      }
      physical.set(id, { ref: name, attributes });
    }
    client.destroy();

    // Queues: those without a redrive policy (the DLQs) first, so that redrive targets exist.
    const queues = resourcesOfType(template, 'AWS::SQS::Queue').sort(
      ([, a], [, b]) => Number(Boolean(a.Properties?.RedrivePolicy)) - Number(Boolean(b.Properties?.RedrivePolicy)),
    );
    for (const [id, queue] of queues) {
      const props = queue.Properties ?? {};
      const name = nameOf(id, props.QueueName);
      const attributes: Record<string, string> = {};
      for (const key of [
        'VisibilityTimeout',
        'MessageRetentionPeriod',
        'DelaySeconds',
        'ReceiveMessageWaitTimeSeconds',
        'MaximumMessageSize',
        'FifoQueue',
        'ContentBasedDeduplication',
      ]) {
        if (props[key] !== undefined) attributes[key] = String(resolve(props[key]));
      }
      if (props.RedrivePolicy) attributes.RedrivePolicy = JSON.stringify(resolve(props.RedrivePolicy));
      const created = sqs.createQueue(name, { attributes });
      physical.set(id, { ref: created.queueUrl, attributes: { Arn: created.queueArn, QueueUrl: created.queueUrl, QueueName: name } });
    }

    // Functions, roles, log groups and the API are named now; their environments are resolved
    // once the gateway's port is known.
    // Deploy-time functions have no part in serving and nothing here calls them: BucketDeployment's
    // (Python) copies the console's files and config.json into its bucket during a deploy.
    const deployOnly = new Set(resourcesOfType(template, 'Custom::CDKBucketDeployment').map(([, r]) => targetOf(r.Properties?.ServiceToken)));
    const functions = resourcesOfType(template, 'AWS::Lambda::Function').filter(([id]) => !deployOnly.has(id));
    for (const [id] of functions) physical.set(id, { ref: id, attributes: { Arn: `arn:aws:lambda:${region}:${ACCOUNT}:function:${id}` } });
    for (const [id] of resourcesOfType(template, 'AWS::IAM::Role'))
      physical.set(id, { ref: id, attributes: { Arn: `arn:aws:iam::${ACCOUNT}:role/${id}`, RoleId: id } });
    for (const [id, group] of resourcesOfType(template, 'AWS::Logs::LogGroup')) {
      const name = nameOf(id, group.Properties?.LogGroupName);
      physical.set(id, { ref: name, attributes: { Arn: `arn:aws:logs:${region}:${ACCOUNT}:log-group:${name}:*` } });
    }
    const [restApis, stages] = [resourcesOfType(template, 'AWS::ApiGateway::RestApi'), resourcesOfType(template, 'AWS::ApiGateway::Stage')];
    for (const [id] of restApis) physical.set(id, { ref: API_ID, attributes: { RootResourceId: 'root' } });
    for (const [id, stage] of stages) physical.set(id, { ref: stage.Properties!.StageName, attributes: {} });
    for (const [id] of resourcesOfType(template, 'AWS::ApiGateway::Authorizer')) physical.set(id, { ref: id, attributes: { AuthorizerId: id } });
    for (const [id, db] of resourcesOfType(template, 'AWS::Timestream::Database'))
      physical.set(id, {
        ref: nameOf(id, db.Properties?.DatabaseName),
        attributes: { Arn: `arn:aws:timestream:${region}:${ACCOUNT}:database/${nameOf(id, db.Properties?.DatabaseName)}` },
      });
    for (const [id, table] of resourcesOfType(template, 'AWS::Timestream::Table')) {
      const database = resolve(table.Properties?.DatabaseName);
      const name = nameOf(id, table.Properties?.TableName);
      physical.set(id, {
        ref: `${database}|${name}`,
        attributes: { Name: name, Arn: `arn:aws:timestream:${region}:${ACCOUNT}:database/${database}/table/${name}` },
      });
    }
    for (const [id, rule] of resourcesOfType(template, 'AWS::Events::Rule')) {
      const name = nameOf(id, rule.Properties?.Name);
      physical.set(id, { ref: name, attributes: { Arn: `arn:aws:events:${region}:${ACCOUNT}:rule/${name}` } });
    }
    // IoT Core's resources are named by their name property, and their ARNs are of IoT's shape.
    for (const [type, nameKey, kind] of [
      ['AWS::IoT::Authorizer', 'AuthorizerName', 'authorizer'],
      ['AWS::IoT::DomainConfiguration', 'DomainConfigurationName', 'domainconfiguration'],
      ['AWS::IoT::TopicRule', 'RuleName', 'rule'],
    ]) {
      for (const [id, resource] of resourcesOfType(template, type)) {
        const name = nameOf(id, resolve(resource.Properties?.[nameKey]));
        physical.set(id, { ref: name, attributes: { Arn: `arn:aws:iot:${region}:${ACCOUNT}:${kind}/${name}` } });
      }
    }

    // The user pool and its clients, as the template makes them, on cognito-local; its triggers run
    // the template's functions (once they run) when the pool may invoke them (below).
    let cognito: LocalCognito | undefined;
    const triggerRefusals = new Map<string, string>();
    const lambdas = new Map<string, LocalLambda>();
    const invokeTrigger = async ({ name, functionId }: UserPoolTriggerSpec, event: unknown) => {
      const refusal = triggerRefusals.get(name);
      if (refusal) throw new TriggerInvokeRefusedError(refusal);
      return lambdas.get(functionId)!.invoke(event);
    };
    if (userPool) {
      log(`starting the user pool ${userPool.id} (cognito-local) with ${userPool.clients.length} clients and ${userPool.triggers.length} triggers…`);
      cognito = await startLocalCognito({
        port: options.cognitoPort ?? 0,
        dataDir: dataDir && join(dataDir, 'cognito'),
        pool: resolve(userPool.settings),
        clients: userPool.clients.map((c) => resolve(c.settings)),
        triggers: Object.fromEntries(userPool.triggers.map((t) => [t.name, (event: unknown) => invokeTrigger(t, event)])),
        onMessage: options.onMessage,
      });
      stops.push(cognito.stop);
      const poolId = cognito.userPoolId;
      physical.set(userPool.id, {
        ref: poolId,
        attributes: {
          Arn: `arn:aws:cognito-idp:${region}:${ACCOUNT}:userpool/${poolId}`,
          ProviderName: `cognito-idp.${region}.amazonaws.com/${poolId}`,
          ProviderURL: `https://cognito-idp.${region}.amazonaws.com/${poolId}`,
          UserPoolId: poolId,
        },
      });
      for (const [i, c] of userPool.clients.entries()) {
        physical.set(c.id, { ref: cognito!.clientIds[i], attributes: { ClientId: cognito!.clientIds[i], Name: String(resolve(c.settings.ClientName)) } });
      }
    }

    const held = await holdPort(options.port || 0);
    stops.push(held.release); // a failed start lets go of it too
    const { port } = held;
    const stageName = stages[0]?.[1].Properties?.StageName ?? 'v3';
    // The API's address as the template writes it, and where it answers here.
    const cloudApiUrl = `https://${API_ID}.execute-api.${region}.amazonaws.com`;
    const localApiUrl = `http://127.0.0.1:${port}`;

    // Buckets, as declared: named by BucketName or as CloudFormation names them (lower case), with
    // their CORS rules, the console's distribution standing for the console served here.
    for (const [id, bucket] of resourcesOfType(template, 'AWS::S3::Bucket')) {
      const props = bucket.Properties ?? {};
      const name =
        typeof props.BucketName === 'string'
          ? props.BucketName
          : `${assembly.name}-${id}`
              .toLowerCase()
              .replace(/[^a-z0-9.-]/g, '-')
              .slice(0, 63);
      physical.set(id, {
        ref: name,
        attributes: {
          Arn: `arn:aws:s3:::${name}`,
          DomainName: `${name}.s3.amazonaws.com`,
          RegionalDomainName: `${name}.s3.${region}.amazonaws.com`,
          DualStackDomainName: `${name}.s3.dualstack.${region}.amazonaws.com`,
        },
      });
      const rules = ((resolve(props.CorsConfiguration?.CorsRules ?? []) ?? []) as Array<Record<string, any>>).map(
        (rule): CorsRule => ({
          allowedOrigins: (rule.AllowedOrigins ?? []).flatMap((o: string) =>
            o === `https://${CONSOLE_DOMAIN}` ? [localApiUrl, `http://localhost:${port}`] : [o],
          ),
          allowedMethods: rule.AllowedMethods ?? [],
          allowedHeaders: (rule.AllowedHeaders ?? []).map((h: string) => h.toLowerCase()),
          exposedHeaders: rule.ExposedHeaders ?? [],
          ...(rule.MaxAge !== undefined ? { maxAgeSeconds: Number(rule.MaxAge) } : {}),
        }),
      );
      await s3.createBucket(name, rules);
    }

    // Each function's role statements, resolved.
    const policies = resourcesOfType(template, 'AWS::IAM::Policy');
    const statementsOf = (fn: CfnResource): PolicyStatement[] => statementsOfRole(targetOf(fn.Properties?.Role));
    const statementsOfRole = (roleId: string | undefined): PolicyStatement[] => {
      if (!roleId) return [];
      const role = template.Resources[roleId];
      const inline = (role?.Properties?.Policies ?? []).flatMap((p: { PolicyDocument: { Statement: unknown[] } }) => p.PolicyDocument.Statement);
      const attached = policies
        .filter(([, p]) => (p.Properties?.Roles ?? []).some((r: unknown) => targetOf(r) === roleId))
        .flatMap(([, p]) => p.Properties!.PolicyDocument.Statement);
      return resolve([...inline, ...attached]) as PolicyStatement[];
    };

    const permissions = resourcesOfType(template, 'AWS::Lambda::Permission').map(
      ([, p]) => resolve(p.Properties) as { FunctionName: string; Principal: string; SourceArn?: string; SourceAccount?: string; Action: string },
    );
    const mayInvoke = (fnId: string, sourceArn: string, principal = 'apigateway.amazonaws.com') =>
      permissions.some(
        (p) =>
          [fnId, physical.get(fnId)!.attributes.Arn].includes(p.FunctionName) &&
          p.Principal === principal &&
          wildcardMatch(p.Action, 'lambda:InvokeFunction', true) &&
          (!p.SourceArn || wildcardMatch(p.SourceArn, sourceArn)) &&
          (!p.SourceAccount || p.SourceAccount === ACCOUNT),
      );
    const invokeRefusals: string[] = [];
    // Cognito calls a trigger only when the function's resource policy lets cognito-idp invoke it for this pool.
    for (const trigger of userPool?.triggers ?? []) {
      const poolArn = physical.get(userPool!.id)!.attributes.Arn;
      if (mayInvoke(trigger.functionId, poolArn, 'cognito-idp.amazonaws.com')) continue;
      const refusal = `Cognito may not invoke ${trigger.functionId}: no AWS::Lambda::Permission for cognito-idp.amazonaws.com on user pool ${userPool!.id}`;
      triggerRefusals.set(trigger.name, refusal);
      invokeRefusals.push(`${trigger.name}: ${refusal}`);
      log(`${refusal}: its ${trigger.name} trigger fails every call (UnexpectedLambdaException)`);
    }
    // The MQTT door, when the template has one: a local broker stands in for IoT Core, and a local
    // IoT control plane answers the custom resource that reads its addresses (a domain name and a
    // data endpoint of IoT's shape, which the variables below point back here).
    const iotAuthorizer = iotAuthorizerOf(template);
    const hasIot = Boolean(iotAuthorizer) || resourcesOfType(template, 'AWS::IoT::TopicRule').length > 0;
    const mqttHost = `${API_ID}-devices-ats.iot.${region}.amazonaws.com`;
    const dataHost = `${API_ID}-ats.iot.${region}.amazonaws.com`;
    let tls: BrokerTls | undefined;
    let iotUpstreams: { iot: string; iotdata: string } | undefined;
    let mqttUrls = { url: '', tlsUrl: '' };
    // Read before any function starts: SQL or an action that cannot run here stops the start at once.
    const topicRules: TopicRuleSpec[] = hasIot ? topicRulesOf(template, resolve) : [];
    // `lambdas` is filled once the functions run; until then (the broker starts first) no device can connect.
    const roles: Record<string, PolicyStatement[]> = {};
    /**
     * The broker standing in for IoT Core (ports from the options, or free ones): it authenticates
     * each CONNECT with the template's IoT authorizer, invoked only when the function's resource
     * policy lets iot.amazonaws.com invoke it, and runs the topic rules, each action sent with its
     * role through a proxy of that role.
     */
    const startTemplateBroker = async () => {
      const ruleClients = new Map<string, SQSClient>();
      for (const roleId of new Set(topicRules.flatMap((r) => [...r.actions, ...(r.errorAction ? [r.errorAction] : [])].map((a) => a.roleId)))) {
        roles[roleId] = statementsOfRole(roleId);
        const proxy = await startRecordingProxy({
          functionName: roleId,
          roleName: roleId,
          statements: () => roles[roleId],
          upstreams: { sqs: sqs.address },
          arnContext: { region, account: ACCOUNT },
          record: (c) => calls.push(c),
        });
        stops.push(proxy.stop);
        const client = new SQSClient({ endpoint: proxy.endpoints.sqs, useQueueUrlAsEndpoint: false });
        stops.push(async () => client.destroy());
        ruleClients.set(roleId, client);
      }
      const rules = topicRules.map((spec) =>
        brokerRuleOf(
          spec,
          async (action, body) => {
            await ruleClients.get(action.roleId)!.send(new SendMessageCommand({ QueueUrl: action.queueUrl, MessageBody: body }));
          },
          log,
        ),
      );
      const door = iotAuthorizer;
      const refusal = !door
        ? 'the template has no IoT authorizer'
        : (door.unusable ??
          (mayInvoke(door.functionId, physical.get(door.id)!.attributes.Arn, 'iot.amazonaws.com')
            ? undefined
            : `IoT Core may not invoke ${door.functionId}: no AWS::Lambda::Permission for iot.amazonaws.com on authorizer ${door.id}`));
      if (refusal) {
        invokeRefusals.push(`MQTT CONNECT: ${refusal}`);
        log(`${refusal}: every MQTT CONNECT is refused`);
      }
      log(`starting the MQTT broker, ${topicRules.length} topic rules…`);
      return startMqttBroker({
        port: options.mqttPort ?? 0,
        tlsPort: options.mqttTlsPort ?? 0,
        dataPlanePort: 0,
        tls: tls!,
        region,
        authorizer: async (event) => {
          if (refusal) throw new Error(refusal);
          return (await lambdas.get(door!.functionId)!.invoke(event)) as IotAuthorizerResult;
        },
        rules,
      });
    };
    if (hasIot) {
      tls = await brokerTls(dataDir);
      const mqtt = await startTemplateBroker();
      stops.push(mqtt.stop);
      mqttUrls = { url: mqtt.url, tlsUrl: mqtt.tlsUrl };
      const domains = Object.fromEntries(
        resourcesOfType(template, 'AWS::IoT::DomainConfiguration').map(([id, d]) => [
          physical.get(id)!.ref,
          { arn: physical.get(id)!.attributes.Arn, domainName: mqttHost, serviceType: d.Properties?.ServiceType },
        ]),
      );
      const controlPlane = await startIotControlPlane({ domains, dataEndpoint: dataHost });
      stops.push(controlPlane.stop);
      iotUpstreams = { iot: controlPlane.url, iotdata: mqtt.dataPlaneEndpoint };
    }
    /**
     * A value of the template as it works here: the API's address is the local gateway's; the
     * devices' broker address (IoT Core's port 8883 on the domain) is the local broker's TLS port;
     * the data endpoint is the function's own IAM proxy of the data plane; Amazon Root CA 1, which
     * signs IoT Core's AWS-managed domains, is the local broker's CA.
     */
    const localize = (value: string, endpoints: Record<string, string> = {}) => {
      let out = value.replaceAll(cloudApiUrl, localApiUrl);
      if (!tls) return out;
      out = out.replaceAll(`mqtts://${mqttHost}:${IOT_CORE_MQTTS_PORT}`, mqttUrls.tlsUrl);
      if (endpoints.iotdata) out = out.replaceAll(`https://${dataHost}`, endpoints.iotdata);
      return isAmazonRootCa1(out) ? tls.caCert : out;
    };

    log(`starting ${functions.length} functions from their bundles…`);
    const upstreams = { dynamodb: dynamo.endpoint, sqs: sqs.address, s3: s3.endpoint, ...iotUpstreams };
    const overrides = localOverrides(options, cognito);
    // Each traced function's X-Ray daemon (Lambda runs one beside it): what it receives is reported.
    const daemons = new Map<string, Awaited<ReturnType<typeof startXrayDaemon>>>();
    const createFunction = async (id: string, fn: CfnResource) => {
      const props = fn.Properties ?? {};
      if (!String(props.Runtime ?? '').startsWith('nodejs')) throw new Error(`${id}: runtime ${props.Runtime} cannot run here (Node.js only).`);
      const asset = fn.Metadata?.['aws:asset:path'];
      if (!asset) throw new Error(`${id} has no bundled asset (aws:asset:path): inline or prebuilt code cannot be checked here.`);
      roles[id] = statementsOf(fn);
      const roleName = targetOf(props.Role) ?? 'none';
      const proxy = await startRecordingProxy({
        functionName: id,
        roleName,
        statements: () => roles[id],
        upstreams,
        arnContext: { region, account: ACCOUNT },
        record: (c) => calls.push(c),
      });
      stops.push(proxy.stop);
      const variables = Object.fromEntries(
        Object.entries(resolve(props.Environment?.Variables ?? {}) as Record<string, string>).map(([k, v]) => [k, localize(String(v), proxy.endpoints)]),
      );
      const traced = props.TracingConfig?.Mode === 'Active';
      const daemon = traced ? await startXrayDaemon() : undefined;
      if (daemon) {
        daemons.set(id, daemon);
        stops.push(daemon.stop);
      }
      const lambda = new LocalLambda({
        tracing: traced,
        name: id,
        codeDir: join(dir, asset),
        handler: props.Handler,
        memoryMb: props.MemorySize ?? 128,
        timeoutSeconds: props.Timeout ?? 3,
        env: {
          ...LOCAL_AWS_ENV,
          AWS_DEFAULT_REGION: region,
          AWS_LAMBDA_FUNCTION_NAME: id,
          AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(props.MemorySize ?? 128),
          AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
          AWS_EXECUTION_ENV: `AWS_Lambda_${props.Runtime}`,
          LAMBDA_TASK_ROOT: join(dir, asset),
          _HANDLER: props.Handler,
          // What Lambda sets for a function with active tracing: where its daemon listens, and what a call outside an invocation does.
          ...(daemon ? { AWS_XRAY_DAEMON_ADDRESS: daemon.address, AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR' } : {}),
          TZ: ':UTC',
          ...Object.fromEntries(Object.entries(proxy.endpoints).map(([service, url]) => [ENDPOINT_VARIABLES[service as keyof typeof ENDPOINT_VARIABLES], url])),
          ...variables,
          ...overrides(variables),
        },
      });
      stops.push(() => lambda.stop());
      lambdas.set(id, lambda);
    };
    // As CloudFormation orders them: the custom resources' functions first, then the custom
    // resources (whose attributes other functions' variables read), then every other function.
    const providers = new Set(customResourcesOf(template).map(([id]) => providerOf(template, id)));
    for (const [id, fn] of functions) if (providers.has(id)) await createFunction(id, fn);
    await Promise.all([...lambdas.values()].map((l) => l.start()));
    await createCustomResources({
      template,
      resolve,
      stackId: pseudo['AWS::StackId'],
      lambdaOf: (fnId) => lambdas.get(fnId)!,
      onCreated: (id, p) => physical.set(id, p),
      log,
    });
    for (const [id, fn] of functions) if (!providers.has(id)) await createFunction(id, fn);
    await Promise.all([...lambdas.values()].map((l) => l.start()));

    // The API, from its resources and methods.
    const executeApiArn = `arn:aws:execute-api:${region}:${ACCOUNT}:${API_ID}`;
    const { routes, authorizerIds } = apiRoutes(stack);
    const gatewayAuthorizers: Record<string, GatewayAuthorizer> = {};
    for (const authorizerId of authorizerIds) {
      const props = template.Resources[authorizerId].Properties!;
      const [fnId] = functionsIn(template, props.AuthorizerUri);
      const lambda = lambdas.get(fnId);
      if (!lambda) throw new Error(`Authorizer ${authorizerId} names no function of the template.`);
      const sources = String(props.IdentitySource ?? '')
        .split(',')
        .map((source) => source.trim())
        .filter(Boolean);
      const headers = sources.map((source) => /^method\.request\.header\.(.+)$/.exec(source)?.[1]);
      if (headers.some((header) => !header))
        throw new Error(`Authorizer ${authorizerId}: identity source ${props.IdentitySource} is not a header; only header identity sources run here.`);
      const allowed = mayInvoke(fnId, `${executeApiArn}/authorizers/${authorizerId}`);
      gatewayAuthorizers[authorizerId] = {
        functionName: fnId,
        identityHeaders: headers as string[],
        // API Gateway's default when the template leaves it out: 300 s.
        cacheTtlMs: (props.AuthorizerResultTtlInSeconds ?? 300) * 1000,
        handler: async (event, context) => {
          if (!allowed) throw new Error(`API Gateway may not invoke ${fnId}: no AWS::Lambda::Permission for authorizer ${authorizerId}`);
          return (await lambda.invoke(event, context.awsRequestId)) as APIGatewayAuthorizerResult;
        },
      };
    }
    const gatewayResponses: Partial<Record<GatewayResponseType, GatewayResponse>> = {};
    for (const [, response] of resourcesOfType(template, 'AWS::ApiGateway::GatewayResponse')) {
      const props = response.Properties!;
      const headers = Object.fromEntries(
        Object.entries((props.ResponseParameters ?? {}) as Record<string, string>)
          .filter(([k]) => k.startsWith('gatewayresponse.header.'))
          // A header may be built from the stack's values (the console's origin): resolved first.
          .map(([k, v]) => [k.slice('gatewayresponse.header.'.length).toLowerCase(), String(resolve(v)).replace(/^'|'$/g, '')]),
      );
      gatewayResponses[props.ResponseType as GatewayResponseType] = {
        status: props.StatusCode ? Number(props.StatusCode) : undefined,
        headers,
        template: props.ResponseTemplates?.['application/json'] ?? '{"message":$context.error.messageString}',
      };
    }
    // A method whose function lacks an invoke permission for it fails as on AWS (a configuration error).
    const servedRoutes = routes.map((r) => {
      const sourceArn = `${executeApiArn}/${stageName}/${r.method}${r.path.replace(/\{[^}]+\}/g, 'x')}`;
      if (mayInvoke(r.handler, sourceArn)) return r;
      log(`API Gateway may not invoke ${r.handler} for ${r.method} ${r.path} (no AWS::Lambda::Permission): it answers 5xx`);
      return { ...r, handler: `${NO_PERMISSION}${r.handler}` };
    });
    // The console as the template deploys it: the BucketDeployments' files of the bucket that
    // receives config.json (or a test's folder), and that config.json, its markers resolved.
    const bucketsDir = dataDir ? join(dataDir, 'buckets') : mkdtempSync(join(tmpdir(), 'fleetstream-buckets-'));
    if (!dataDir) stops.push(async () => rmSync(bucketsDir, { recursive: true, force: true }));
    const consoleBucket = [...deployBuckets(stack, resolve, bucketsDir).values()].find((d) => existsSync(join(d, 'config.json')));
    const consoleConfig =
      consoleBucket === undefined ? undefined : (JSON.parse(localize(readFileSync(join(consoleBucket, 'config.json'), 'utf8'))) as ConsoleConfig);
    if (consoleBucket)
      log(`serving the console from the template's bucket deployments${options.consoleDistDir ? ` (its files from ${options.consoleDistDir})` : ''}`);
    await held.release();
    // The stage's throttling, as its method settings on every resource and method say.
    const everything = ((stages[0]?.[1].Properties?.MethodSettings ?? []) as Array<Record<string, unknown>>).find(
      (m) => m.ResourcePath === '/*' && m.HttpMethod === '*',
    );
    const throttle =
      typeof everything?.ThrottlingRateLimit === 'number' && typeof everything?.ThrottlingBurstLimit === 'number'
        ? { rateLimit: everything.ThrottlingRateLimit, burstLimit: everything.ThrottlingBurstLimit }
        : undefined;
    const server: Server = await startApiGateway({
      port,
      stage: stageName,
      throttle,
      outsideStage:
        consoleConfig &&
        consoleSite({
          distDir: options.consoleDistDir ?? consoleBucket!,
          // The deployed config has no cognitoEndpoint (the console then calls the region's Cognito): here it is cognito-local.
          config: () => ({ ...consoleConfig, ...(cognito ? { cognitoEndpoint: cognito.endpoint } : {}) }),
          outbox: () => cognito?.outbox ?? [],
        }),
      routes: servedRoutes,
      authorizers: gatewayAuthorizers,
      gatewayResponses,
      loadHandler: async (fnId) => {
        if (fnId.startsWith(NO_PERMISSION))
          throw new Error(`Execution failed due to configuration error: invalid permissions on Lambda function ${fnId.slice(NO_PERMISSION.length)}`);
        const lambda = lambdas.get(fnId)!;
        if (lambda.streaming) {
          const streamed = async (event: unknown, stream: ResponseStream, context: { awsRequestId: string }) =>
            lambda.invokeStreaming(event, stream, context.awsRequestId);
          return localAwsLambda.streamifyResponse(streamed as never) as never;
        }
        return (async (event: unknown, context: { awsRequestId: string }) =>
          (await lambda.invoke(event, context.awsRequestId)) as APIGatewayProxyResult) as never;
      },
    });
    stops.push(
      () =>
        new Promise<void>((resolveClose) => {
          server.close(() => resolveClose());
          server.closeAllConnections();
        }),
    );

    // Event source mappings.
    const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping');
    for (const [id, mapping] of mappings) {
      const props = mapping.Properties!;
      if (props.Enabled === false) continue;
      const [fnId] = functionsIn(template, props.FunctionName);
      const lambda = lambdas.get(fnId);
      if (!lambda) throw new Error(`Event source mapping ${id} names no function of the template.`);
      const sourceId = targetOf(props.EventSourceArn);
      const source = sourceId ? template.Resources[sourceId] : undefined;
      const start = source ? EVENT_SOURCES[source.Type] : undefined;
      if (!start) throw new Error(`Event source mapping ${id}: ${source ? source.Type : JSON.stringify(props.EventSourceArn)} sources do not run here yet.`);
      log(`mapping ${sourceId} → ${fnId}…`);
      // Lambda polls with the function's own role: the poller's calls go through a proxy of that role.
      const pollerProxy = await startRecordingProxy({
        functionName: fnId,
        roleName: targetOf(template.Resources[fnId].Properties?.Role) ?? 'none',
        statements: () => roles[fnId],
        upstreams: { sqs: sqs.address, dynamodbstreams: dynamo.endpoint },
        arnContext: { region, account: ACCOUNT },
        record: (c) => calls.push(c),
      });
      stops.push(pollerProxy.stop);
      stops.push(
        await start({
          id,
          mapping: props,
          resolve,
          source: source!,
          physical: physical.get(sourceId!)!,
          lambda,
          functionArn: physical.get(fnId)!.attributes.Arn,
          endpoints: pollerProxy.endpoints,
          streams,
          queueUrlOf: (arn) => [...physical.values()].find((p) => p.attributes.Arn === arn && p.attributes.QueueUrl)?.attributes.QueueUrl,
          concurrency: options.consumerConcurrency ?? 2,
          log,
          onStreamError: options.onStreamError,
        }),
      );
    }

    // Scheduled rules: each enabled rule fires its targets at its rate (or the test's interval),
    // one run at a time; EventBridge invokes a function only with its resource policy's leave.
    const sweepRuleId = targetOf(template.Outputs?.RolloutSweepRuleName?.Value);
    if (options.sweepIntervalSeconds !== undefined && !sweepRuleId)
      throw new Error("The template has no RolloutSweepRuleName output: cannot change the sweep's interval.");
    const schedules: RunningSchedule[] = [];
    for (const rule of rules) {
      const ruleArn = physical.get(rule.id)!.attributes.Arn;
      if (!rule.enabled) {
        log(`rule ${rule.id} is disabled: it never fires`);
        continue;
      }
      const intervalMs = rule.id === sweepRuleId && options.sweepIntervalSeconds ? options.sweepIntervalSeconds * 1000 : rule.intervalMs;
      for (const target of rule.targets) {
        const refusal = mayInvoke(target.functionId, ruleArn, 'events.amazonaws.com')
          ? undefined
          : `EventBridge may not invoke ${target.functionId}: no AWS::Lambda::Permission for events.amazonaws.com on rule ${rule.id}`;
        if (refusal) {
          invokeRefusals.push(`${rule.id} (${rule.expression}): ${refusal}`);
          log(`${refusal}: every firing of the rule fails (FailedInvocations)`);
        } else
          log(`rule ${rule.id} (${rule.expression}${intervalMs === rule.intervalMs ? '' : `, here every ${intervalMs / 1000} s`}) → ${target.functionId}…`);
        const lambda = lambdas.get(target.functionId)!;
        const running = startSchedule({
          rule: physical.get(rule.id)!.ref,
          function: target.functionId,
          intervalMs,
          ruleArn,
          region,
          account: ACCOUNT,
          refusal,
          invoke: (event) => lambda.invoke(target.input ?? event),
          onError: options.onScheduleError,
        });
        schedules.push(running);
        stops.push(running.stop);
      }
    }

    // What a deploy prints: the outputs.
    const outputs: Record<string, string> = {};
    for (const [name, output] of Object.entries(template.Outputs ?? {})) {
      try {
        outputs[name] = localize(String(resolve(output.Value)));
      } catch {
        // an output naming something that does not run here (a dashboard): not needed locally
      }
    }
    const queue_urls: Record<string, string> = {};
    for (const [name, url] of Object.entries(outputs)) {
      const match = /^(\w+?)(Queue|Dlq)Url$/.exec(name);
      // RegistryStreamDlqUrl names the queue the source runtime calls registry-stream-dlq.
      if (match) queue_urls[`${match[1].replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}${match[2] === 'Dlq' ? '-dlq' : ''}`] = url;
    }
    // FirmwareBucketName names the bucket the source runtime calls `firmware`.
    const buckets = Object.fromEntries(
      Object.entries(outputs).flatMap(([name, value]) => {
        const match = /^(\w+)BucketName$/.exec(name);
        return match ? [[`${match[1].charAt(0).toLowerCase()}${match[1].slice(1)}`, value]] : [];
      }),
    );

    // The test helpers and CLIs reach the engines as the source runtime lets them.
    const registryTable = outputs.RegistryTableName;
    const timeseriesTable = resourcesOfType(template, 'AWS::DynamoDB::Table')
      .map(([tid]) => physical.get(tid)!.ref)
      .find((n) => n !== registryTable);
    // The workspaces' default limits the template gives its functions, for the operator's command.
    const limitDefaults = resourcesOfType(template, 'AWS::Lambda::Function')
      .map(([, fn]) => (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.WORKSPACE_LIMIT_DEFAULTS)
      .find((value): value is string => typeof value === 'string');
    Object.assign(process.env, LOCAL_AWS_ENV, {
      ...(limitDefaults ? { WORKSPACE_LIMIT_DEFAULTS: limitDefaults } : {}),
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.address,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      REGISTRY_TABLE: registryTable,
      ...(timeseriesTable ? { TIMESERIES_TABLE: timeseriesTable } : {}),
      ...(queue_urls.ingest ? { INGEST_QUEUE_URL: queue_urls.ingest } : {}),
      ...(queue_urls.forward ? { FORWARD_QUEUE_URL: queue_urls.forward } : {}),
    });
    log('creating the bootstrap account…');
    const account = await bootstrap(dataDir, options.devApiKey, registryTable);
    // The first console user, a member of the bootstrap account (as npm start's), made by the host as the account is.
    const firstUser =
      cognito && (await ensureFirstUser(cognito, account.account_id, options.firstUser ?? {}, dataDir && join(dataDir, 'cognito'), registryTable));

    makeReport = () => ({
      stack: assembly.name,
      routes: routes.length,
      functions: [...lambdas.keys()],
      initErrors: [...lambdas.values()].filter((l) => l.initError).map((l) => `${l.spec.name}: ${l.initError!.name}: ${l.initError!.message}`),
      eventSourceMappings: mappings.length,
      topicRules: topicRules.length,
      userPoolTriggers: userPool?.triggers.length ?? 0,
      scheduledRules: rules.length,
      invokeRefusals,
      calls: calls.length,
      refused: calls.filter((c) => c.decision !== 'allow'),
      unused: unusedGrants(roles, calls).map((g) => `${g.function} ${g.action} ${g.resource}`),
      traces: Object.fromEntries([...daemons].map(([id, daemon]) => [id, daemon.received()])),
    });
    const base = `${localApiUrl}/${stageName}`;
    return {
      ...account,
      base_url: outputs.ApiUrl ?? base,
      storage_url: outputs.StorageUrl ?? base,
      sqs_endpoint: sqs.address,
      queue_urls,
      s3_endpoint: s3.endpoint,
      buckets,
      mqtt_url: mqttUrls.url,
      mqtts_url: mqttUrls.tlsUrl,
      ...(consoleConfig ? { console_url: `${localApiUrl}/` } : {}),
      ...(cognito
        ? {
            cognito_endpoint: cognito.endpoint,
            user_pool_id: cognito.userPoolId,
            // The console's client: the one its config.json names.
            user_pool_client_id: consoleConfig?.userPoolClientId ?? cognito.userPoolClientId,
            user_email: firstUser!.email,
            user_password: firstUser!.password,
          }
        : {}),
      schedules: () => schedules.map((s) => s.status()),
      stop,
      report: () => finalReport ?? makeReport(),
    };
  } catch (error) {
    await stop();
    throw error;
  }
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

/**
 * A resource with no engine here: its `Ref` is a name, its `Arn` one of its service's shape (which
 * only policies use: no proxy checks that service's calls).
 */
const genericPhysical = (stackName: string, id: string, resource: CfnResource | undefined, region: string): Physical | undefined => {
  if (!resource) return undefined;
  const name = `${stackName}-${id}`;
  const [, service, kind] = resource.Type.split('::');
  const arn: Record<string, string> = service && kind ? { Arn: `arn:aws:${service.toLowerCase()}:${region}:${ACCOUNT}:${kind.toLowerCase()}/${name}` } : {};
  // The console's distribution (the API's CORS origin) gets a host of the reserved `.invalid` domain:
  // here the console is served from the API's own origin, which needs no CORS.
  const domain: Record<string, string> = resource.Type === 'AWS::CloudFront::Distribution' ? { DomainName: CONSOLE_DOMAIN } : {};
  return { ref: name, attributes: resource.Type.startsWith('AWS::') ? { ...arn, ...domain } : {} };
};

/**
 * Creates a table as declared, unless it was kept in the data folder from an earlier run; a kept
 * table whose stream differs from the declared one gets the declared stream, as an update of
 * StreamSpecification would, and one without a declared global secondary index gets it (waited for
 * until ACTIVE). Resolves with the table's description.
 */
const createTable = async (client: DynamoDBClient, input: CreateTableCommandInput): Promise<{ Table: TableDescription; kept: boolean }> => {
  const describe = async () => (await client.send(new DescribeTableCommand({ TableName: input.TableName }))).Table!;
  let existing: TableDescription | undefined;
  try {
    existing = await describe();
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  if (!existing) {
    const { TableDescription } = await client.send(new CreateTableCommand(input));
    return { Table: TableDescription!, kept: false };
  }
  // Indexes the template adds to a kept table are created, as CloudFormation adds them in place.
  const indexes = (input.GlobalSecondaryIndexes ?? []).map((gsi) => ({
    gsi,
    attributes: (input.AttributeDefinitions ?? []).filter((a) => gsi.KeySchema?.some((k) => k.AttributeName === a.AttributeName)),
  }));
  const added = await ensureIndexes(client, input.TableName!, indexes);
  const wanted = input.StreamSpecification;
  const has = existing.StreamSpecification;
  if (wanted && !(has?.StreamEnabled && has.StreamViewType === wanted.StreamViewType)) {
    // A stream of another view type must be turned off before the wanted one is turned on.
    if (has?.StreamEnabled) await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: { StreamEnabled: false } }));
    await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: wanted }));
    return { Table: await describe(), kept: false };
  }
  return { Table: added.length ? await describe() : existing, kept: true };
};

/**
 * The API's routes from the template: every AWS::ApiGateway::Method on its resource's full path,
 * with the function its AWS_PROXY integration names, its authorizer and its transfer mode.
 * @throws Error for an integration that cannot run here (not a Lambda proxy)
 */
export const apiRoutes = (stack: AssemblyStack): { routes: GatewayRoute[]; authorizerIds: string[] } => {
  const { template } = stack;
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known !== undefined) return known;
    const { ParentId, PathPart } = template.Resources[id].Properties!;
    // The root's children point at RestApi.RootResourceId.
    const parentId = ParentId?.['Fn::GetAtt'] ? undefined : targetOf(ParentId);
    const path = `${parentId ? pathOf(parentId) : ''}/${PathPart}`;
    paths.set(id, path);
    return path;
  };
  const routes: GatewayRoute[] = [];
  const authorizerIds = new Set<string>();
  for (const [id, method] of resourcesOfType(template, 'AWS::ApiGateway::Method')) {
    const props = method.Properties!;
    if (props.HttpMethod === 'OPTIONS' && props.Integration?.Type === 'MOCK') continue; // CORS preflight
    const path = props.ResourceId?.['Fn::GetAtt'] ? '/' : pathOf(targetOf(props.ResourceId)!);
    if (props.Integration?.Type !== 'AWS_PROXY')
      throw new Error(`${id} (${props.HttpMethod} ${path}): integration ${props.Integration?.Type} does not run here (Lambda proxy only).`);
    const [fnId] = functionsIn(template, props.Integration.Uri);
    if (!fnId) throw new Error(`${id} (${props.HttpMethod} ${path}) integrates no function of the template.`);
    let auth = 'none';
    if (props.AuthorizationType === 'CUSTOM') {
      auth = targetOf(props.AuthorizerId)!;
      authorizerIds.add(auth);
    } else if (props.AuthorizationType && props.AuthorizationType !== 'NONE') {
      throw new Error(`${id}: authorization ${props.AuthorizationType} does not run here.`);
    }
    routes.push({ method: props.HttpMethod, path, handler: fnId, auth, stream: props.Integration.ResponseTransferMode === 'STREAM' });
  }
  return { routes, authorizerIds: [...authorizerIds] };
};

/** What starts an event source mapping of one kind of source. */
interface EventSourceStart {
  /** The mapping's logical ID, for messages. */
  id: string;
  mapping: Record<string, any>;
  resolve: (value: unknown) => any;
  source: CfnResource;
  physical: Physical;
  lambda: LocalLambda;
  functionArn: string;
  /** The consumer role's proxy of each service: Lambda reads the source and sends to destinations with that role. */
  endpoints: Record<string, string>;
  /** The tables' streams by their ARN here: the engine's ARN, and whether the table was kept from an earlier run. */
  streams: ReadonlyMap<string, { engineArn: string; kept: boolean }>;
  /** The URL of a queue of the template, by its ARN. */
  queueUrlOf: (arn: string) => string | undefined;
  concurrency: number;
  log: (message: string) => void;
  onStreamError?: (error: unknown, what: string) => void;
}

/** A setting of a mapping that no poller here honours fails the start rather than being ignored. */
const refuseUnsupported = (id: string, mapping: Record<string, any>, unsupported: Record<string, (value: any) => boolean>) => {
  for (const [key, isDefault] of Object.entries(unsupported)) {
    if (mapping[key] !== undefined && !isDefault(mapping[key]))
      throw new Error(`Event source mapping ${id}: ${key} ${JSON.stringify(mapping[key])} does not run here.`);
  }
};

/**
 * Event source mappings by the type of their source. A new kind is one more entry; an unknown
 * kind fails the start rather than being left out.
 */
const EVENT_SOURCES: Record<string, (start: EventSourceStart) => Promise<() => Promise<void>>> = {
  'AWS::SQS::Queue': async ({ mapping, physical, lambda, endpoints, concurrency }) => {
    const sqsEndpoint = endpoints.sqs;
    const queueUrl = physical.attributes.QueueUrl;
    const client = new SQSClient({ endpoint: sqsEndpoint, useQueueUrlAsEndpoint: false });
    // As CreateEventSourceMapping: the queue is read with the function's role, and its visibility
    // timeout must cover the function's timeout.
    const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['VisibilityTimeout'] }));
    client.destroy();
    const visibility = Number(Attributes?.VisibilityTimeout ?? 30);
    if (visibility < lambda.spec.timeoutSeconds) {
      throw new Error(
        `Queue visibility timeout (${visibility} s) is less than the timeout of ${lambda.spec.name} (${lambda.spec.timeoutSeconds} s): CreateEventSourceMapping refuses this.`,
      );
    }
    const poller = startSqsPoller({
      queueUrl,
      queueArn: physical.attributes.Arn,
      endpoint: sqsEndpoint,
      batchSize: mapping.BatchSize ?? 10,
      maxBatchingWindowMs: (mapping.MaximumBatchingWindowInSeconds ?? 0) * 1000,
      reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      timeoutMs: lambda.spec.timeoutSeconds * 1000,
      functionName: lambda.spec.name,
      handler: async (event) => (await lambda.invoke(event)) as never,
      concurrency,
    });
    return poller.stop;
  },
  // A table's stream (EventSourceArn: Fn::GetAtt [Table, StreamArn]), read by the one DynamoDB
  // stream poller (local/dynamodb-stream-poller.ts) with the mapping's settings.
  'AWS::DynamoDB::Table': async ({ id, mapping, resolve, lambda, functionArn, endpoints, streams, queueUrlOf, log, onStreamError }) => {
    const streamArn = String(resolve(mapping.EventSourceArn));
    const stream = streams.get(streamArn);
    if (!stream) throw new Error(`Event source mapping ${id}: ${streamArn} is not the stream of a table here (is StreamSpecification set?).`);
    refuseUnsupported(id, mapping, {
      TumblingWindowInSeconds: (v) => v === 0,
      MaximumRecordAgeInSeconds: (v) => v === -1,
      StartingPositionTimestamp: () => false,
    });
    const position = mapping.StartingPosition;
    if (position !== 'TRIM_HORIZON' && position !== 'LATEST') throw new Error(`Event source mapping ${id}: StartingPosition ${position} does not run here.`);
    const destination = mapping.DestinationConfig?.OnFailure?.Destination;
    const onFailureQueueUrl = destination === undefined ? undefined : queueUrlOf(String(resolve(destination)));
    if (destination !== undefined && !onFailureQueueUrl)
      throw new Error(`Event source mapping ${id}: the on-failure destination ${String(resolve(destination))} is not a queue of the template.`);
    // The mapping's checkpoints live in this process: on a table kept from an earlier run, the
    // template's TRIM_HORIZON would deliver the retained records' events a second time.
    const startingPosition = stream.kept ? 'LATEST' : position;
    if (stream.kept && position !== 'LATEST') log(`mapping ${id}: the table was kept from an earlier run, so its stream is read from now on (LATEST)`);
    const timeoutMs = lambda.spec.timeoutSeconds * 1000;
    const poller = await startDynamoDbStreamPoller({
      streamArn: stream.engineArn,
      batchSize: mapping.BatchSize ?? 100,
      maxBatchingWindowMs: (mapping.MaximumBatchingWindowInSeconds ?? 0) * 1000,
      parallelizationFactor: mapping.ParallelizationFactor ?? 1,
      // -1 (the default): retried until the record expires from the stream.
      retryAttempts: mapping.MaximumRetryAttempts === undefined || mapping.MaximumRetryAttempts === -1 ? Infinity : mapping.MaximumRetryAttempts,
      bisectBatchOnError: mapping.BisectBatchOnFunctionError === true,
      timeoutMs,
      functionName: lambda.spec.name,
      functionArn,
      handler: async (event) => (await lambda.invoke(event)) as never,
      reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      filter: eventFilterOf(mapping.FilterCriteria) as ((record: unknown) => boolean) | undefined,
      onFailureQueueUrl,
      startingPosition,
      endpoints: { dynamodbStreams: endpoints.dynamodbstreams, sqs: endpoints.sqs },
      onError: onStreamError,
    });
    return poller.stop;
  },
};

/**
 * The template with the local runtime's tuning applied, as a deploy with other settings would be:
 * the authorizers' cache TTL, the queues' visibility timeouts and receive counts, a consumer's
 * timeout and retry backoff (from npm start's variables or a test's options). The queues are found by the
 * stack's outputs (`<Name>QueueUrl`).
 */
const applyOverrides = (assembly: AssemblyStack, options: CloudAssemblyOptions): AssemblyStack => {
  const template = structuredClone(assembly.template);
  // -c authorizerCacheTtlSeconds=…: how long a revoked key may still work.
  if (options.authorizerCacheTtlSeconds !== undefined) {
    for (const [, authorizer] of resourcesOfType(template, 'AWS::ApiGateway::Authorizer')) {
      // An authorizer with API Gateway's cache off caches itself, for its function's AUTHORIZER_CACHE_TTL_SECONDS.
      if (authorizer.Properties!.AuthorizerResultTtlInSeconds === 0) continue;
      authorizer.Properties!.AuthorizerResultTtlInSeconds = options.authorizerCacheTtlSeconds;
    }
    for (const [, fn] of resourcesOfType(template, 'AWS::Lambda::Function')) {
      const variables = (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
      if (variables && 'AUTHORIZER_CACHE_TTL_SECONDS' in variables) variables.AUTHORIZER_CACHE_TTL_SECONDS = String(options.authorizerCacheTtlSeconds);
    }
  }
  // FIRMWARE_UPLOAD_URL_TTL_SECONDS: how long a firmware upload URL works (a test's expired URL).
  if (options.firmwareUploadUrlTtlSeconds !== undefined) {
    for (const [, fn] of resourcesOfType(template, 'AWS::Lambda::Function')) {
      const variables = (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
      if (variables && 'FIRMWARE_UPLOAD_URL_TTL_SECONDS' in variables) variables.FIRMWARE_UPLOAD_URL_TTL_SECONDS = String(options.firmwareUploadUrlTtlSeconds);
    }
  }
  for (const [queue, settings] of Object.entries(options.queues ?? {}) as Array<[QueueName, Partial<QueueSettings>]>) {
    if (!settings || !Object.keys(settings).length) continue;
    const pascal = queue.charAt(0).toUpperCase() + queue.slice(1);
    const queueId = targetOf(template.Outputs?.[`${pascal}QueueUrl`]?.Value);
    if (!queueId) throw new Error(`The template has no ${pascal}QueueUrl output: cannot change the ${queue} queue.`);
    const props = template.Resources[queueId].Properties!;
    if (settings.visibilityTimeoutSeconds !== undefined) props.VisibilityTimeout = settings.visibilityTimeoutSeconds;
    if (settings.maxReceiveCount !== undefined) props.RedrivePolicy = { ...props.RedrivePolicy, maxReceiveCount: settings.maxReceiveCount };
    for (const [, mapping] of resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')) {
      if (targetOf(mapping.Properties!.EventSourceArn) !== queueId) continue;
      const fn = template.Resources[targetOf(mapping.Properties!.FunctionName)!].Properties!;
      // As the source runtime: a visibility chosen for quick retries shortens the consumer's timeout too.
      const timeout = Math.min(settings.consumerTimeoutSeconds ?? fn.Timeout, settings.visibilityTimeoutSeconds ?? Infinity, fn.Timeout);
      fn.Timeout = Math.max(1, timeout);
      const variables = fn.Environment?.Variables ?? {};
      if (settings.retry) {
        for (const key of Object.keys(variables)) {
          if (key.endsWith('_RETRY_BASE_SECONDS')) variables[key] = String(settings.retry.baseSeconds);
          if (key.endsWith('_RETRY_MAX_SECONDS')) variables[key] = String(settings.retry.maxSeconds);
        }
      }
    }
  }
  // The registry stream's consumer settings (fewer retries in tests), on the mapping of the registry table's stream.
  const stream = options.registryStream ?? {};
  if (Object.keys(stream).length) {
    const tableId = targetOf(template.Outputs?.RegistryTableName?.Value);
    const mapping = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')
      .map(([, m]) => m.Properties!)
      .find((m) => targetOf(m.EventSourceArn) === tableId && m.EventSourceArn?.['Fn::GetAtt']?.[1] === 'StreamArn');
    if (!tableId || !mapping) throw new Error("The template maps no function to the registry table's stream: cannot change its settings.");
    if (stream.batchSize !== undefined) mapping.BatchSize = stream.batchSize;
    if (stream.maxBatchingWindowSeconds !== undefined) mapping.MaximumBatchingWindowInSeconds = stream.maxBatchingWindowSeconds;
    if (stream.retryAttempts !== undefined) mapping.MaximumRetryAttempts = stream.retryAttempts;
  }
  return { ...assembly, template };
};

/**
 * The variables the local runtime adds to every function: webhook receivers on 127.0.0.1 over
 * http (refused in the cloud), the webhook timeout, the ingest's cache bound
 * (DEVICE_PLACE_CACHE_SECONDS), the usage's flush and the limits' cache, an export run's length
 * (EXPORT_RUN_SECONDS), and the handlers' log level and metrics switch when npm start was given
 * them; and to a function given the user pool's ID (USER_POOL_ID, resolved from the
 * template's Ref), the issuer of its tokens, cognito-local's (on AWS it follows from the region
 * and that ID: lambdas/shared/env.ts). A function given another pool's ID gets none, and fails.
 */
const localOverrides =
  (options: CloudAssemblyOptions, cognito: LocalCognito | undefined) =>
  (variables: Record<string, string>): Record<string, string> => ({
    ...(cognito && variables.USER_POOL_ID === cognito.userPoolId ? { USER_POOL_ISSUER: cognito.issuer } : {}),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    ...(options.webhookTimeoutMs ? { WEBHOOK_TIMEOUT_MS: String(options.webhookTimeoutMs) } : {}),
    ...(options.devicePlaceCacheSeconds !== undefined ? { DEVICE_PLACE_CACHE_SECONDS: String(options.devicePlaceCacheSeconds) } : {}),
    ...(options.usageFlushSeconds !== undefined ? { USAGE_FLUSH_SECONDS: String(options.usageFlushSeconds) } : {}),
    ...(options.limitsCacheSeconds !== undefined ? { LIMITS_CACHE_SECONDS: String(options.limitsCacheSeconds) } : {}),
    ...(options.exportRunSeconds !== undefined ? { EXPORT_RUN_SECONDS: String(options.exportRunSeconds) } : {}),
    ...(process.env.POWERTOOLS_LOG_LEVEL ? { POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL } : {}),
    ...(process.env.POWERTOOLS_METRICS_DISABLED ? { POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED } : {}),
  });
