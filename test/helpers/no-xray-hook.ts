// A setup file of every project: the handlers and stores a test loads run outside Lambda, where
// their X-Ray tracer (lambdas/shared/tracer.ts) does nothing. In its default (automatic) mode the
// X-Ray SDK installs an async hook as it loads, and each test file's module registry loads it anew:
// a worker's hooks added up file after file, until promises cost several times as much late in a
// run. Manual mode installs none (local/runtime.ts sets it for `npm start` too). The template's
// functions run in processes of their own, with Lambda's variables, and keep automatic mode.
process.env.AWS_XRAY_MANUAL_MODE ??= '1';
