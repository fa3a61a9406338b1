import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CloudAssemblyReport } from '../../local/cloud-assembly/runtime';

/**
 * Global teardown of the e2e-cloud project: merges the IAM reports of every run of the assembly
 * and prints the figures (routes, functions and mappings exercised, calls checked, refused, grants
 * never used by the whole suite). A refused call fails the run: the stack's IAM has a gap.
 */
export default async () => {
  const dir = process.env.FLEETSTREAM_IAM_REPORT_DIR;
  if (!dir) return;
  const reports = readdirSync(dir)
    .filter((f) => f.startsWith('iam-') && f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CloudAssemblyReport)
    // a run that failed to start ran nothing
    .filter((r) => r.functions.length > 0);
  if (!reports.length) return;
  const refused = reports.flatMap((r) => r.refused);
  // A grant is unused by the suite when no run used it.
  const unused = [...new Set(reports[0].unused)].filter((g) => reports.every((r) => r.unused.includes(g)));
  const summary = {
    runs: reports.length,
    routes: reports[0].routes,
    functions: reports[0].functions.length,
    eventSourceMappings: reports[0].eventSourceMappings,
    topicRules: reports[0].topicRules,
    userPoolTriggers: reports[0].userPoolTriggers ?? 0,
    scheduledRules: reports[0].scheduledRules ?? 0,
    // What the template's AWS::Lambda::Permissions let no service invoke (a trigger, an authorizer): those calls failed.
    invokeRefusals: [...new Set(reports.flatMap((r) => r.invokeRefusals ?? []))],
    calls: reports.reduce((sum, r) => sum + r.calls, 0),
    refused: refused.length,
    unused,
    seconds: Math.round((Date.now() - Number(process.env.FLEETSTREAM_CLOUD_STARTED_AT)) / 1000),
  };
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  process.stderr.write(
    `\ncloud assembly: ${summary.routes} routes, ${summary.functions} functions, ${summary.eventSourceMappings} event source mappings (queues and the table stream), ${summary.topicRules} topic rules, ${summary.userPoolTriggers} user pool triggers, ${summary.scheduledRules} scheduled rules from the template; ` +
      `${summary.calls} AWS calls checked against IAM in ${summary.runs} runs, ${summary.refused} refused, ${unused.length} permissions never used, ${summary.invokeRefusals.length} invocations no permission allows (${join(dir, 'summary.json')})\n`,
  );
  if (refused.length) {
    throw new Error(
      `IAM refused ${refused.length} calls the suite made:\n${[...new Set(refused.map((c) => `${c.function} ${c.action} ${c.resource}`))].join('\n')}`,
    );
  }
};
