import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '@jest/types';
import type { CloudAssemblyReport } from '../../local/cloud-assembly/runtime';
import { synthesis } from './cloud-assembly-setup';
import { stopDynamoDbPool } from './dynamodb-pool';

/**
 * The permissions (`function action resource`, tables named without a run's suffix) that the
 * e2e-cloud project exercised when it last changed: a whole run must use each of them again, so
 * that a test moved off the template, or one that stops calling a route, cannot quietly leave a
 * grant untested. FLEETSTREAM_RECORD_IAM=1 writes what a whole run exercised into it.
 */
export const IAM_EXERCISED_FILE = join(process.cwd(), 'test', 'cloud', 'iam-exercised.json');

/**
 * Global teardown of the e2e-cloud project: merges the IAM reports of every run of the assembly
 * and prints the figures (routes, functions and mappings exercised, calls checked, refused, grants
 * never used by the whole suite). A refused call fails the run: the stack's IAM has a gap. A whole
 * run (no file or test filter) also fails when a route of the template was never called, or when a
 * permission of IAM_EXERCISED_FILE was not used.
 */
export default async (globalConfig: Config.GlobalConfig) => {
  await synthesis.__assemblySynthesis;
  await stopDynamoDbPool();
  const dir = process.env.FLEETSTREAM_IAM_REPORT_DIR;
  if (!dir) return;
  const reports = readReports(dir);
  if (!reports.length) return;
  const summary = summarize(reports);
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  process.stderr.write(
    `\ncloud assembly: ${summary.routes} routes (${summary.routesServed} called), ${summary.functions} functions, ${summary.eventSourceMappings} event source mappings (queues and the table stream), ${summary.topicRules} topic rules, ${summary.userPoolTriggers} user pool triggers, ${summary.scheduledRules} scheduled rules from the template; ` +
      `${summary.calls} AWS calls checked against IAM in ${summary.runs} runs, ${summary.refused} refused, ${summary.used.length} permissions used, ${summary.unused.length} never used, ${summary.invokeRefusals.length} invocations no permission allows (${join(dir, 'summary.json')}, kept after the run with FLEETSTREAM_KEEP_TEST_TMP=1)\n`,
  );
  const problems = [
    ...(summary.refusedCalls.length ? [`IAM refused ${summary.refusedCalls.length} calls the suite made:\n${summary.refusedCalls.join('\n')}`] : []),
    ...(isWholeRun(globalConfig) ? coverageProblems(summary) : []),
  ];
  if (problems.length) throw new Error(problems.join('\n\n'));
};

/** The reports of the runs that started (a run that failed to start ran nothing). */
const readReports = (dir: string): CloudAssemblyReport[] =>
  readdirSync(dir)
    .filter((f) => f.startsWith('iam-') && f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CloudAssemblyReport)
    .filter((r) => r.functions.length > 0);

/** What all runs did together: a route or grant counts as exercised when any run exercised it. */
const summarize = (reports: CloudAssemblyReport[]) => {
  const union = (pick: (r: CloudAssemblyReport) => string[] | undefined) => [...new Set(reports.flatMap((r) => pick(r) ?? []))].sort();
  const used = union((r) => r.used);
  const routesServed = union((r) => r.routesServed);
  return {
    runs: reports.length,
    routes: reports[0].routes,
    routesServed: routesServed.length,
    routesNeverCalled: (reports[0].routesDeclared ?? []).filter((route) => !routesServed.includes(route)),
    functions: reports[0].functions.length,
    eventSourceMappings: reports[0].eventSourceMappings,
    topicRules: reports[0].topicRules,
    userPoolTriggers: reports[0].userPoolTriggers ?? 0,
    scheduledRules: reports[0].scheduledRules ?? 0,
    // What the template's AWS::Lambda::Permissions let no service invoke (a trigger, an authorizer): those calls failed.
    invokeRefusals: union((r) => r.invokeRefusals),
    calls: reports.reduce((sum, r) => sum + r.calls, 0),
    refused: reports.reduce((sum, r) => sum + r.refused.length, 0),
    refusedCalls: union((r) => r.refused.map((c) => `${c.function} ${c.action} ${c.resource}`)),
    used,
    // A grant is unused by the suite when no run used it.
    unused: union((r) => r.unused).filter((grant) => !used.includes(grant)),
    seconds: Math.round((Date.now() - Number(process.env.FLEETSTREAM_CLOUD_STARTED_AT)) / 1000),
  };
};

/** A run of the whole project: no file, test name or changed-files filter. */
const isWholeRun = (globalConfig: Config.GlobalConfig) =>
  globalConfig.nonFlagArgs.length === 0 && !globalConfig.testNamePattern && !globalConfig.onlyChanged && !globalConfig.findRelatedTests;

/** Routes never called, and recorded permissions not used, by this whole run; FLEETSTREAM_RECORD_IAM=1 records what it used. */
const coverageProblems = (summary: ReturnType<typeof summarize>): string[] => {
  if (process.env.FLEETSTREAM_RECORD_IAM === '1') writeFileSync(IAM_EXERCISED_FILE, `${JSON.stringify(summary.used, null, 2)}\n`);
  const recorded: string[] = existsSync(IAM_EXERCISED_FILE) ? JSON.parse(readFileSync(IAM_EXERCISED_FILE, 'utf8')) : [];
  const lost = recorded.filter((grant) => !summary.used.includes(grant));
  const added = summary.used.filter((grant) => !recorded.includes(grant));
  if (added.length) {
    process.stderr.write(
      `cloud assembly: ${added.length} permissions used that ${IAM_EXERCISED_FILE} does not list yet (FLEETSTREAM_RECORD_IAM=1 adds them):\n${added.join('\n')}\n`,
    );
  }
  return [
    ...(summary.routesNeverCalled.length
      ? [
          `${summary.routesNeverCalled.length} routes of the template were never called on it (each must be, in a test of the e2e-cloud project):\n${summary.routesNeverCalled.join('\n')}`,
        ]
      : []),
    ...(lost.length
      ? [
          `${lost.length} permissions the e2e-cloud project exercised (${IAM_EXERCISED_FILE}) were not used by this run: a test that used them no longer runs on the template, or no longer calls them:\n${lost.join('\n')}`,
        ]
      : []),
  ];
};
