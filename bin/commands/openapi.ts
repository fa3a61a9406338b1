import type { Command } from 'commander';

/** `fleetstream openapi` (`npm run openapi`): regenerates the OpenAPI document (bin/cli/openapi.ts). */
export const register = (program: Command) =>
  program
    .command('openapi')
    .summary('regenerate the OpenAPI document')
    .description('write lambdas/handlers/openapi/openapi.json, generated from the route table and its zod schemas')
    .action(async () => {
      const { writeOpenApi } = await import('../cli/openapi');
      writeOpenApi();
    });
