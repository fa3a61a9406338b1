import type { XrayDaemon } from './functions';
import { grantsOf, unusedGrants, type CallRecord } from './iam';
import type { ReceivedTrace } from './xray-daemon';
import type { RunContext } from './run-context';

/** What ran from the template, and what IAM said about each AWS call. */
export interface CloudAssemblyReport {
  stack: string;
  routes: number;
  /** Every route of the template (`METHOD /path`), and those whose function a request reached. */
  routesDeclared: string[];
  routesServed: string[];
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
  /** `function action resource` of each Allow no call used, and of each one a call used. */
  unused: string[];
  used: string[];
  /** What each function with X-Ray active tracing sent its daemon. */
  traces: Record<string, ReceivedTrace>;
}

/** The report of a start that failed before the template ran. */
export const emptyReport = (): CloudAssemblyReport => ({
  stack: '',
  routes: 0,
  routesDeclared: [],
  routesServed: [],
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
  used: [],
  traces: {},
});

/** What the template declared that the run counts, beside what the run context collected. */
export interface ReportCounts {
  routes: string[];
  eventSourceMappings: number;
  topicRules: number;
  userPoolTriggers: number;
  scheduledRules: number;
  daemons: Map<string, XrayDaemon>;
}

/**
 * The report of a run as it stands: the calls recorded so far, and what was granted, used or
 * unused. Grants name tables without this run's suffix, and streams without their label (the
 * time the engine made them), so that runs compare.
 */
export const reportOf = (
  { stack, lambdas, invokeRefusals, calls, roles, routesServed, tableSuffix }: RunContext,
  counts: ReportCounts,
): CloudAssemblyReport => {
  const unused = unusedGrants(roles, calls);
  const named = (g: { function: string; action: string; resource: string }) => {
    const grant = `${g.function} ${g.action} ${g.resource.replace(/\/stream\/[^/]+$/, '/stream/*')}`;
    return tableSuffix ? grant.replaceAll(tableSuffix, '') : grant;
  };
  return {
    stack: stack.name,
    routes: counts.routes.length,
    routesDeclared: counts.routes,
    routesServed: [...routesServed].sort(),
    functions: [...lambdas.keys()],
    initErrors: [...lambdas.values()].filter((l) => l.initError).map((l) => `${l.spec.name}: ${l.initError!.name}: ${l.initError!.message}`),
    eventSourceMappings: counts.eventSourceMappings,
    topicRules: counts.topicRules,
    userPoolTriggers: counts.userPoolTriggers,
    scheduledRules: counts.scheduledRules,
    invokeRefusals,
    calls: calls.length,
    refused: calls.filter((c) => c.decision !== 'allow'),
    unused: unused.map(named),
    used: grantsOf(roles)
      .filter((g) => !unused.some((u) => u.function === g.function && u.action === g.action && u.resource === g.resource))
      .map(named),
    traces: Object.fromEntries([...counts.daemons].map(([id, daemon]) => [id, daemon.received()])),
  };
};
