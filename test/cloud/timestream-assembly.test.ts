import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { startCloudAssemblyRuntime, type CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { readAssembly, resourcesOfType } from '../../local/cloud-assembly/template';
import { LOCAL_ALARM_SENDER } from '../../local/ses-engine';
import { apiClient } from '../helpers/api-client';
import { cloudAssemblyDir, sharedAssemblyEngine } from '../helpers/runtime';

/**
 * The `timestream` backend synthesizes, and its assembly runs here as far as an engine exists:
 * every bundle loads, and the routes that do not touch Timestream answer. Timestream has no local
 * engine (its query language has no emulator), so its calls are not run here; its requests are
 * checked with the SDK mocked in test/unit/timeseries.
 *
 * Its template is synthesized here, as bin/app.ts does with `-c timeseries=timestream` (cdk-nag's
 * rules and CloudFormation Validate included), but without bundling: the backend is chosen by the
 * functions' environment, and every handler is bundled from the same entry with the same options
 * whatever the context (lib/constructs/handler-function.ts), so its functions run the bundles of the
 * run's assembly (`cdk synth`'s, test/cloud/bundles.test.ts), rather than a second esbuild of them all.
 */
let dir: string;
let runtime: CloudAssemblyRuntime;

const CDK_JSON_CONTEXT = (JSON.parse(readFileSync(join(import.meta.dirname, '../../cdk.json'), 'utf8')) as { context: Record<string, unknown> }).context;

/** The timestream stack's template and assembly, its functions' code the run's bundles. */
const synthesizeTimestream = (runDir: string) => {
  // Validate runs whatever the environment says (test/helpers/infra-synth.ts turns it off elsewhere).
  delete process.env.CDK_VALIDATION;
  const app = new App({
    outdir: mkdtempSync(join(tmpdir(), 'fleetstream-cdk-out-')),
    // cdk.json's context (its feature flags), then the backend and the local alarm sender, as the
    // run's synthesis has it (test/helpers/cloud-assembly-setup.ts).
    context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [], timeseries: 'timestream', alarmSender: LOCAL_ALARM_SENDER },
  });
  new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
  // As bin/app.ts: an unacknowledged finding of cdk-nag fails the synthesis.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  const assembly = app.synth();

  const { template: bundled } = readAssembly(runDir);
  const { name, template } = readAssembly(assembly.directory);
  for (const [id, fn] of resourcesOfType(template, 'AWS::Lambda::Function')) {
    const run = bundled.Resources[id];
    if (!run) throw new Error(`the run's assembly has no function ${id}`);
    fn.Properties = { ...fn.Properties, Code: run.Properties?.Code };
    fn.Metadata = { ...fn.Metadata, ...run.Metadata };
  }
  const runnable = mkdtempSync(join(tmpdir(), 'fleetstream-timestream-'));
  // The run's assets (the bundles, the console's build), then any this synthesis made alone, linked rather than copied.
  for (const from of [runDir, assembly.directory])
    for (const entry of readdirSync(from))
      if (entry.startsWith('asset.') && !existsSync(join(runnable, entry))) symlinkSync(join(from, entry), join(runnable, entry));
  writeFileSync(join(runnable, 'manifest.json'), readFileSync(join(assembly.directory, 'manifest.json')));
  writeFileSync(join(runnable, `${name}.template.json`), JSON.stringify(template));
  writeFileSync(join(runnable, 'validation-report.json'), readFileSync(join(assembly.directory, 'validation-report.json')));
  return runnable;
};

beforeAll(async () => {
  dir = synthesizeTimestream(cloudAssemblyDir()!);
  runtime = await startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir });
}, 300_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('the timestream assembly', () => {
  it('declares the Timestream database and table and no time-series DynamoDB table, and CloudFormation Validate finds nothing in it', () => {
    const { template } = readAssembly(dir);
    const report = JSON.parse(readFileSync(join(dir, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{ pluginName: string; violations: Array<{ ruleName: string; description: string }> }>;
    };

    expect(resourcesOfType(template, 'AWS::Timestream::Database')).toHaveLength(1);
    expect(resourcesOfType(template, 'AWS::Timestream::Table')).toHaveLength(1);
    expect(resourcesOfType(template, 'AWS::DynamoDB::Table')).toHaveLength(1);
    expect(report.pluginReports.flatMap((r) => r.violations.map((v) => `${r.pluginName} ${v.ruleName}: ${v.description}`))).toEqual([]);
  });

  it('loads every bundle and serves the management API', async () => {
    const api = apiClient(runtime.base_url, runtime.api_key);

    const { status } = await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'ts' });

    const { template } = readAssembly(dir);
    // Every function runs but BucketDeployment's, which only copies the console's files at deploy time.
    const deployOnly = [...new Set(resourcesOfType(template, 'Custom::CDKBucketDeployment').map(([, r]) => JSON.stringify(r.Properties?.ServiceToken)))];
    const served = resourcesOfType(template, 'AWS::Lambda::Function').filter(([id]) => !deployOnly.some((token) => token.includes(`"${id}"`)));
    expect(runtime.report().initErrors).toEqual([]);
    expect(deployOnly).toHaveLength(1);
    expect(runtime.report().functions.sort()).toEqual(served.map(([id]) => id).sort());
    expect(status).toBe(200);
  });
});
