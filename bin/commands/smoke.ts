import type { Command } from 'commander';
import type { SmokeOptions } from '../cli/smoke';
import { numberFrom } from './options';

/** `fleetstream smoke` (`npm run smoke`): every route of the table called on a deployed or local API (bin/cli/smoke.ts). */
export const register = (program: Command) =>
  program
    .command('smoke')
    .usage('--url <url> --key <key> [options]')
    .summary('check every route of a deployed or local API')
    .description(
      'call every route of the route table against a deployed (or local) API and check each answer: one line a call on stderr, a JSON summary on stdout; exits 1 when one failed',
    )
    .requiredOption('--url <url>', 'the API’s base URL, ending in /v3 (the ApiUrl stack output, or the READY line’s base_url)')
    .requiredOption('--key <key>', 'an API key (fsk_…)')
    .option('--timeout-seconds <seconds>', 'how long a published point may take to come back, 1 to 3,600', numberFrom(1, 3600), 60)
    .addHelpText(
      'after',
      `
Example:
  fleetstream smoke --url https://<api-id>.execute-api.<region>.amazonaws.com/v3 --key fsk_…`,
    )
    .action(async (options: SmokeOptions) => {
      const { runSmoke } = await import('../cli/smoke');
      await runSmoke(options);
    });
