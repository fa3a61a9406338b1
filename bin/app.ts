/**
 * The CDK app (`cdk synth`, `cdk deploy`): one environment-agnostic Fleetstream stack, checked by
 * cdk-nag's AWS Solutions rules during synthesis. Settings come from context; see lib/stack-config.ts.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { FleetstreamStack } from '../lib/fleetstream-stack';
import { configFromContext } from '../lib/stack-config';

const app = new App();
new FleetstreamStack(app, app.node.tryGetContext('stackName') ?? 'Fleetstream', {
  description: 'Fleetstream: serverless device cloud (v3 interface)',
  config: configFromContext(app.node),
});
// cdk-nag 3 is a validation plugin: any unacknowledged finding fails synthesis.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
