// A setup file of the infra project. Each synthesis ran CDK's built-in CloudFormation Validate (a
// WebAssembly rule engine) over the template: about 5 of the 7 CPU-seconds a synthesis of the stack
// takes, again in every file, for the same stack or for one a test changed on purpose (whose
// findings are only warnings: no feature flag makes them errors here). The stack as deployed is
// validated once, in test/infra/fleetstream-stack.test.ts, which turns it back on and fails on any
// finding; `cdk synth` (the e2e-cloud project's synthesis, `npm run synth`) keeps it too.
process.env.CDK_VALIDATION = 'false';
