import { join } from 'node:path';
import type { LocalCognito } from '../cognito-local';
import { LOCAL_AWS_ENV } from '../dynamodb-local';
import { createCustomResources, customResourcesOf, providerOf } from './custom-resources';
import { ENDPOINT_VARIABLES, startRecordingProxy } from './iam';
import type { IotDoor } from './iot-door';
import { LocalLambda } from './lambda-host';
import type { Localize } from './localize';
import type { Permissions } from './policies';
import { ACCOUNT, type CloudAssemblyOptions, type RunContext } from './run-context';
import { targetOf, type CfnResource } from './template';
import { startXrayDaemon } from './xray-daemon';

/** A function's X-Ray daemon (Lambda runs one beside a traced function). */
export type XrayDaemon = Awaited<ReturnType<typeof startXrayDaemon>>;

/** What every function is started with: the services its proxy forwards to, the local variables, and its role's statements. */
export interface FunctionHost {
  upstreams: Record<string, string>;
  overrides: (variables: Record<string, string>) => Record<string, string>;
  statementsOf: Permissions['statementsOf'];
  localize: Localize;
  /** Each traced function's X-Ray daemon: what it receives is reported. */
  daemons: Map<string, XrayDaemon>;
}

/** The host of the template's functions: the engines (and the MQTT door's planes) behind each function's proxy. */
export const functionHost = (
  { options, engines }: RunContext,
  { door, cognito, permissions, localize }: { door: IotDoor; cognito: LocalCognito | undefined; permissions: Permissions; localize: Localize },
): FunctionHost => ({
  upstreams: { dynamodb: engines.dynamo.endpoint, sqs: engines.sqs.address, s3: engines.s3.endpoint, sesv2: engines.ses.endpoint, ...door.upstreams },
  overrides: localOverrides(options, cognito),
  statementsOf: permissions.statementsOf,
  localize,
  daemons: new Map(),
});

/** The functions the custom resources' ServiceTokens name (which CloudFormation runs before the custom resources), and the others. */
export const splitProviders = (
  { template }: RunContext,
  functions: Array<[string, CfnResource]>,
): { providers: Array<[string, CfnResource]>; others: Array<[string, CfnResource]> } => {
  const providers = new Set(customResourcesOf(template).map(([id]) => providerOf(template, id)));
  return { providers: functions.filter(([id]) => providers.has(id)), others: functions.filter(([id]) => !providers.has(id)) };
};

/**
 * Creates each function and starts it in its container, then waits until every function started so
 * far has loaded; with `onFirstUse`, a function's container starts at its first invocation instead,
 * as Lambda starts one (an init error then shows at that invocation).
 */
export const startFunctions = async (
  run: RunContext,
  host: FunctionHost,
  functions: Array<[string, CfnResource]>,
  { onFirstUse = false } = {},
): Promise<void> => {
  for (const [id, fn] of functions) await createFunction(run, host, id, fn);
  if (onFirstUse) return;
  await Promise.all([...run.lambdas.values()].map((l) => l.start()));
};

/** Creates the custom resources, each by its provider's function; their attributes are what other functions' variables read. */
export const createTemplateCustomResources = ({ template, resolve, pseudo, lambdas, physical, log }: RunContext): Promise<void> =>
  createCustomResources({
    template,
    resolve,
    stackId: pseudo['AWS::StackId'],
    lambdaOf: (fnId) => lambdas.get(fnId)!,
    onCreated: (id, p) => physical.set(id, p),
    log,
  });

/**
 * One function of the template, from its bundled asset, with its handler, memory, timeout and
 * resolved environment, its AWS calls through a recording proxy of its role.
 * @throws Error for a runtime other than Node.js, or a function with no bundled asset
 */
const createFunction = async (run: RunContext, host: FunctionHost, id: string, fn: CfnResource): Promise<void> => {
  const { stack, region, stops, calls, roles, resolve, lambdas } = run;
  const props = fn.Properties ?? {};
  if (!String(props.Runtime ?? '').startsWith('nodejs')) throw new Error(`${id}: runtime ${props.Runtime} cannot run here (Node.js only).`);
  const asset = fn.Metadata?.['aws:asset:path'];
  if (!asset) throw new Error(`${id} has no bundled asset (aws:asset:path): inline or prebuilt code cannot be checked here.`);
  roles[id] = host.statementsOf(fn);
  const roleName = targetOf(props.Role) ?? 'none';
  const proxy = await startRecordingProxy({
    functionName: id,
    roleName,
    statements: () => roles[id],
    upstreams: host.upstreams,
    arnContext: { region, account: ACCOUNT },
    record: (c) => calls.push(c),
  });
  stops.push(proxy.stop);
  const variables = Object.fromEntries(
    Object.entries(resolve(props.Environment?.Variables ?? {}) as Record<string, string>).map(([k, v]) => [k, host.localize(String(v), proxy.endpoints)]),
  );
  const traced = props.TracingConfig?.Mode === 'Active';
  const daemon = traced ? await startXrayDaemon() : undefined;
  if (daemon) {
    host.daemons.set(id, daemon);
    stops.push(daemon.stop);
  }
  const lambda = new LocalLambda({
    tracing: traced,
    name: id,
    codeDir: join(stack.dir, asset),
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
      LAMBDA_TASK_ROOT: join(stack.dir, asset),
      _HANDLER: props.Handler,
      // What Lambda sets for a function with active tracing: where its daemon listens, and what a call outside an invocation does.
      ...(daemon ? { AWS_XRAY_DAEMON_ADDRESS: daemon.address, AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR' } : {}),
      TZ: ':UTC',
      ...Object.fromEntries(Object.entries(proxy.endpoints).map(([service, url]) => [ENDPOINT_VARIABLES[service as keyof typeof ENDPOINT_VARIABLES], url])),
      ...variables,
      ...host.overrides(variables),
    },
  });
  stops.push(() => lambda.stop());
  lambdas.set(id, lambda);
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
