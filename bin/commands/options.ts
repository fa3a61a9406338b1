/**
 * What several `fleetstream` commands share: parsers of option values that say the allowed range
 * when a value is outside it, and the options that find the running `npm start`.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';

/** What `command.error` is given for a usage error found in an action: exit code 2, as commander's own. */
export const USAGE_ERROR = { exitCode: 2, code: 'fleetstream.usage' };

const format = (n: number) => n.toLocaleString('en-US');

/** An option's parser: a whole number from `min` to `max`. */
export const wholeNumber =
  (min: number, max = Infinity) =>
  (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        max === Infinity ? `Expected a whole number of at least ${format(min)}.` : `Expected a whole number from ${format(min)} to ${format(max)}.`,
      );
    }
    return n;
  };

/** An option's parser: a number (fractions too) from `min` to `max`. */
export const numberFrom =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`Expected a number from ${format(min)} to ${format(max)}.`);
    return n;
  };

/** An option's parser: a port number. */
export const portNumber = wholeNumber(1, 65_535);

/** A repeatable option's parser: each value given, in order. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * The longest delay setTimeout and setInterval keep (2^31 − 1 ms), in seconds: a longer one fires
 * at once (https://nodejs.org/api/timers.html#settimeoutcallback-delay-args).
 */
export const MAX_TIMER_SECONDS = 2_147_483;

/** What the commands that act on the running `npm start` are told: `--local`, its data folder, its port. */
export interface LocalOptions {
  local?: boolean;
  dataDir: string;
  port?: number;
}

/**
 * Adds `--local`, `--data-dir` and `--port`: the running `npm start` on a data folder (the one on
 * `--port` when several run there), found by its runtime file (local/runtime-file.ts).
 */
export const addLocalOptions = (command: Command) =>
  command
    .option('--local', 'act on the running `npm start`')
    .addOption(
      new Option('--data-dir <dir>', 'the data folder of that `npm start`').default(
        process.env.FLEETSTREAM_DATA_DIR || '.local',
        'FLEETSTREAM_DATA_DIR, or .local',
      ),
    )
    .option('--port <port>', 'the port of that `npm start`, when several run on the data folder', portNumber);
