import type { QueueName, QueueSettings } from '../../lambdas/queues';
import { LOCAL_ALARM_SENDER } from '../ses-engine';
import { userPoolOf, type UserPoolSpec } from './cognito';
import { scheduledRulesOf, type ScheduledRuleSpec } from './events';
import type { CloudAssemblyOptions } from './run-context';
import { synthesize } from './synth';
import { readAssembly, resourcesOfType, targetOf, type AssemblyStack } from './template';

/** The stack to run, and what of it is read before any engine starts. */
export interface StackToRun {
  stack: AssemblyStack;
  userPool: UserPoolSpec | undefined;
  rules: ScheduledRuleSpec[];
}

/**
 * Reads the cloud assembly (synthesized first when the options name none) and applies the local
 * runtime's tuning to its stack.
 * @throws Error for a pool setting cognito-local cannot honour, or a rule that is not a schedule of a function
 */
export const readStack = async (options: CloudAssemblyOptions, log: (message: string) => void): Promise<StackToRun> => {
  let dir = options.assemblyDir;
  if (!dir) {
    log('synthesizing the app (bundling every handler)…');
    // With the local sender, so that alarm e-mails go to the SES emulator as npm start's do.
    dir = await synthesize({ context: { alarmSender: LOCAL_ALARM_SENDER } });
  }
  const assembly = readAssembly(dir);
  const stack = applyOverrides(assembly, options);
  const { template } = stack;
  log(`running ${assembly.name} from ${dir}`);
  // Read before any engine starts: a pool setting cognito-local cannot honour, or a rule that is
  // not a schedule of a function, stops the start at once.
  const userPool = userPoolOf(template, assembly.name);
  const rules = scheduledRulesOf(template);
  return { stack, userPool, rules };
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
    const pascal = queue.replace(/(^|-)([a-z])/g, (_m, _dash, c: string) => c.toUpperCase()); // alarm-notifications: AlarmNotifications
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
