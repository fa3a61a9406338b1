// Handlers log errors on purpose in some tests; keep the test output readable.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
// The handlers' operator metrics (one EMF line per invocation) stay out of the test output too;
// test/unit/shared/metrics.test.ts turns them on to read them.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
