import { untilSynthesized } from './assembly-synthesis';

// A setup file of the e2e-cloud project, run before each test file's first import: the file runs on
// the assembly its global setup is synthesizing in the background, so it waits until that ended
// (and fails with the CLI's output if it failed). A given FLEETSTREAM_CLOUD_ASSEMBLY is ready.
if (process.env.FLEETSTREAM_CLOUD_ASSEMBLY_SYNTHESIZING) await untilSynthesized(process.env.FLEETSTREAM_CLOUD_ASSEMBLY!);
