import { writeFileSync } from 'node:fs';
import { LOCAL_AWS_ENV } from '../dynamodb-local';
import type { LocalRuntime } from '../runtime';
import { holdApiPort, planApi, startGateway } from './api';
import { createBuckets, deployConsole } from './buckets';
import { startEngines } from './engines';
import { startEventSourceMappings } from './event-sources';
import { createTemplateCustomResources, functionHost, splitProviders, startFunctions } from './functions';
import { startIotDoor } from './iot-door';
import { localizer } from './localize';
import { bootstrapAccount, exportEngines, stackOutputs } from './outputs';
import { nameResources } from './physical-names';
import { readPermissions } from './policies';
import { readStack } from './read-stack';
import { emptyReport, reportOf, type CloudAssemblyReport } from './report';
import { dataDirOf, runContext, type CloudAssemblyOptions, type StartBase } from './run-context';
import { startScheduledRules } from './scheduled-rules';
import { createQueues, createTables } from './tables-and-queues';
import { refuseTriggers, startUserPool } from './user-pool';
import { signalTableWrites } from '../dynamodb-writes';

export { apiRoutes } from './api';
export type { CloudAssemblyReport } from './report';
export type { CloudAssemblyOptions } from './run-context';

/** The local runtime's answer, run from the template: its MQTT door's addresses, and the IAM report. */
export interface CloudAssemblyRuntime extends LocalRuntime {
  /** The broker standing in for the template's IoT Core door; empty when the template has none. */
  mqtt_url: string;
  mqtts_url: string;
  /** The calls recorded so far, and what was granted but unused; final once stopped. */
  report: () => CloudAssemblyReport;
}

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
 * the data plane's Publish; the console domain's authorizer checks the broker's WebSocket listener's
 * connections), the console's user pool from the AWS::Cognito resources on cognito-local
 * (its triggers invoke the template's functions, only with cognito-idp's invoke permission), every
 * scheduled AWS::Events::Rule (its `rate(…)`, one run at a time; a function only with events'
 * invoke permission for the rule), and the console and its config.json from the BucketDeployments. Every AWS call a function or a rule makes passes a recording proxy and
 * is checked against its role's policies. Whatever the template forgets (a variable, a permission,
 * a mapping) fails here as on AWS.
 */
export const startCloudAssemblyRuntime = async (options: CloudAssemblyOptions = {}): Promise<CloudAssemblyRuntime> => {
  const base: StartBase = { options, log: options.log ?? (() => undefined), stops: [], calls: [] };
  // The stream mappings' pollers read at once after a write (this process's, and its functions'
  // through their proxies), and seldom when idle.
  signalTableWrites();
  const { stops } = base;
  let finalReport: CloudAssemblyReport | undefined;
  let makeReport: () => CloudAssemblyReport = emptyReport;
  const stop = async () => {
    finalReport ??= makeReport();
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
    if (options.reportFile) writeFileSync(options.reportFile, `${JSON.stringify(finalReport, null, 2)}\n`);
  };
  try {
    const started = await startTemplate(base);
    makeReport = started.report;
    return { ...started.runtime, stop, report: () => finalReport ?? makeReport() };
  } catch (error) {
    await stop();
    throw error;
  }
};

/** A started template: the runtime's answer (but its stop and report), and how to report on it. */
interface StartedTemplate {
  runtime: Omit<CloudAssemblyRuntime, 'stop' | 'report'>;
  report: () => CloudAssemblyReport;
}

/** The phases of a start, in the order they run (and, each pushing what it started onto `stops`, the reverse of the order they stop). */
const startTemplate = async (base: StartBase): Promise<StartedTemplate> => {
  const { options, log } = base;
  const { stack, userPool, rules } = await readStack(options, log);
  const dataDir = dataDirOf(options);
  const engines = await startEngines(base, dataDir);
  // The host's own clients (the pollers, the bootstrap) use the local credentials and region.
  Object.assign(process.env, LOCAL_AWS_ENV);
  const run = runContext(base, stack, dataDir, engines);

  const streams = await createTables(run);
  createQueues(run);
  const { functions, stages } = nameResources(run);
  const pool = await startUserPool(run, userPool);
  const address = await holdApiPort(run, stages[0]?.[1]);
  await createBuckets(run, address);
  const permissions = readPermissions(run);
  refuseTriggers(run, userPool, pool, permissions.mayInvoke);
  const door = await startIotDoor(run, permissions);
  const localize = localizer(address, door);

  log(`starting ${functions.length} functions from their bundles…`);
  const host = functionHost(run, { door, cognito: pool.cognito, permissions, localize });
  // As CloudFormation orders them: the custom resources' functions first, then the custom
  // resources (whose attributes other functions' variables read), then every other function.
  const { providers, others } = splitProviders(run, functions);
  await startFunctions(run, host, providers);
  await createTemplateCustomResources(run);
  await startFunctions(run, host, others, { onFirstUse: run.options.functionsOnFirstUse });

  const api = planApi(run, address, permissions.mayInvoke);
  const site = deployConsole(run, localize);
  await startGateway(run, address, api, site, pool.cognito);
  const eventSourceMappings = await startEventSourceMappings(run, streams);
  const schedules = startScheduledRules(run, rules, permissions.mayInvoke);

  const { outputs, queue_urls, buckets } = stackOutputs(run, localize);
  const registryTable = exportEngines(run, outputs, queue_urls);
  const { account, firstUser } = await bootstrapAccount(run, pool.cognito, registryTable);
  const { cognito } = pool;
  const base_url = `${address.localApiUrl}/${address.stageName}`;
  return {
    runtime: {
      ...account,
      base_url: outputs.ApiUrl ?? base_url,
      storage_url: outputs.StorageUrl ?? base_url,
      sqs_endpoint: engines.sqs.address,
      queue_urls,
      s3_endpoint: engines.s3.endpoint,
      ses_endpoint: engines.ses.endpoint,
      mail_url: engines.ses.pageUrl,
      buckets,
      mqtt_url: door.urls.url,
      mqtts_url: door.urls.tlsUrl,
      ...(door.urls.wsUrl ? { mqtt_ws_url: door.urls.wsUrl } : {}),
      ...(site.consoleConfig ? { console_url: `${address.localApiUrl}/` } : {}),
      ...(cognito
        ? {
            cognito_endpoint: cognito.endpoint,
            user_pool_id: cognito.userPoolId,
            // The console's client: the one its config.json names.
            user_pool_client_id: site.consoleConfig?.userPoolClientId ?? cognito.userPoolClientId,
            user_email: firstUser!.email,
            user_password: firstUser!.password,
          }
        : {}),
      schedules: () => schedules.map((s) => s.status()),
    },
    report: () =>
      reportOf(run, {
        routes: api.routes.map((r) => `${r.method} ${r.path}`),
        eventSourceMappings,
        topicRules: door.topicRules.length,
        userPoolTriggers: userPool?.triggers.length ?? 0,
        scheduledRules: rules.length,
        daemons: host.daemons,
      }),
  };
};
