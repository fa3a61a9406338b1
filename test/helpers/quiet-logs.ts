// Handlers log errors on purpose in some tests; keep the test output readable.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
