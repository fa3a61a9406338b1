import { Option, type Command } from 'commander';
import type { CostOptions } from '../cli/cost';
import { wholeNumber } from './options';

/** `fleetstream cost` (`npm run cost`): the modelled monthly AWS bill of a fleet's data path (bin/cli/cost.ts). */
export const register = (program: Command) =>
  program
    .command('cost')
    .usage('--points-per-day <n> --devices <n> [options]')
    .summary('model the monthly AWS cost of a fleet’s data path')
    .description(
      'the modelled monthly AWS cost of a fleet’s data path, service by service, from what `npm run bench:requests` measured, beside AWS IoT Core + Timestream used directly',
    )
    .requiredOption('--points-per-day <n>', 'data points a day, all devices together', wholeNumber(1))
    .requiredOption('--devices <n>', 'devices', wholeNumber(1))
    .option('--shape <shape>', 'the measured traffic shape: https-100, https-10 (points per HTTPS request) or mqtt-1 (one a publish)', 'https-100')
    .addOption(new Option('--backend <store>', 'where the time series is kept').choices(['dynamodb', 'timestream']).default('dynamodb'))
    .option('--results <file>', 'the measurement', 'bench/results/data-path.json')
    // Lambda's memory: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
    .option('--memory-mb <mb>', 'the Lambda functions’ memory, 128 to 10,240', wholeNumber(128, 10_240), 512)
    // Timestream's memory store keeps from an hour to a year.
    .option('--retention-hours <hours>', 'Timestream: hours a point stays in the memory store, 1 to 8,766', wholeNumber(1, 8_766), 24)
    .option('--retention-days <days>', 'days points are kept, 1 to 3,650 (default: forever, storage adds up month after month)', wholeNumber(1, 3_650))
    .option('--ingest-containers <n>', 'ingest Lambda containers, each keeping its own places, 1 to 1,000', wholeNumber(1, 1_000), 5)
    .option('--json', 'print JSON instead of the tables')
    .addHelpText(
      'after',
      `
Examples:
  fleetstream cost --points-per-day 14400000 --devices 10000
  fleetstream cost --points-per-day 14400000 --devices 10000 --shape mqtt-1 --backend timestream
  fleetstream cost --points-per-day 14400000 --devices 10000 --retention-days 90`,
    )
    .action(async (options: CostOptions) => {
      const { printCost } = await import('../cli/cost');
      printCost(options);
    });
