import type { Command } from 'commander';
import type { ReplayOptions } from '../cli/replay-dlq';
import { addLocalOptions, wholeNumber } from './options';

/** `fleetstream replay-dlq`: a queue's dead letters back to the queue (bin/cli/replay-dlq.ts). */
export const register = (program: Command) =>
  addLocalOptions(
    program
      .command('replay-dlq')
      .usage('--queue <url or name> [options]')
      .summary('move a dead-letter queue’s messages back to their queue')
      .description(
        'move the messages of a queue’s dead-letter queue back to the queue, so that its consumer tries them again; progress on stderr, a JSON summary on stdout',
      )
      .requiredOption('--queue <url or name>', 'the queue (a URL, or a name such as `forward` with --local)')
      .option('--dlq <url or name>', 'its DLQ (default: the one its redrive policy names)')
      .option('--max <n>', 'stop after this many messages (default: all)', wholeNumber(1)),
  )
    .addHelpText(
      'after',
      `
Without --local, the queue is on AWS (credentials and region as usual; AWS_ENDPOINT_URL_SQS for another endpoint).

Examples:
  fleetstream replay-dlq --local --queue forward
  fleetstream replay-dlq --queue <ForwardQueueUrl stack output>`,
    )
    .action(async (options: ReplayOptions) => {
      const { replayDlq } = await import('../cli/replay-dlq');
      await replayDlq(options);
    });
