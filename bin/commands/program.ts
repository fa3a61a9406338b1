/**
 * The `fleetstream` command and its subcommands (bin/fleetstream.ts runs it). Each subcommand's
 * module declares its options and imports what it runs only in its action, so that `--help` and a
 * usage error answer at once.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, type OutputConfiguration } from 'commander';
import { register as registerAlarms } from './alarms';
import { register as registerCost } from './cost';
import { register as registerCreateAccount } from './create-account';
import { register as registerDevice } from './device';
import { register as registerDevices } from './devices';
import { register as registerLimits } from './limits';
import { register as registerOpenApi } from './openapi';
import { USAGE_ERROR } from './options';
import { register as registerReplayDlq } from './replay-dlq';
import { register as registerSmoke } from './smoke';
import { register as registerStart } from './start';

/** The subcommands, in the order `fleetstream --help` lists them. */
const COMMANDS = [
  registerStart,
  registerCreateAccount,
  registerLimits,
  registerDevice,
  registerDevices,
  registerAlarms,
  registerReplayDlq,
  registerSmoke,
  registerCost,
  registerOpenApi,
];

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * commander's `error: …` as one line that names the command and its help:
 * `fleetstream <cmd>: <what is wrong>. See \`fleetstream <cmd> --help\`.` (a suggestion that
 * commander puts on a line of its own, `(Did you mean …?)`, joins it).
 */
const oneLine = (name: string, text: string) => {
  const message = text
    .replace(/^error: /, '')
    .replace(/\s*\n\s*/g, ' ')
    .trim();
  return `${name}: ${message}${/[.?!]$/.test(message) ? '' : '.'} See \`${name} --help\`.\n`;
};

/**
 * Builds the program with every subcommand. Errors throw a CommanderError instead of exiting
 * (exitOverride, inherited by each subcommand), so that `runFleetstream` decides the exit code and
 * a test can build it in its own process; `output` replaces where help and errors are written.
 */
export const buildProgram = (output: Pick<OutputConfiguration, 'writeOut' | 'writeErr'> = {}) => {
  const program = new Command('fleetstream')
    .description(
      'Fleetstream on this machine and on a deployed stack: the local runtime, accounts, limits, a device simulator, device search, alarms, the DLQ, the smoke test, the cost model.',
    )
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show the help of the command')
    .helpCommand('help [command]', 'show the help of a command')
    .exitOverride()
    .configureOutput(output);
  for (const register of COMMANDS) register(program);
  // Set after registering: each subcommand has copied the program's output, and names itself.
  const named = (command: Command, name: string): Array<[Command, string]> => [
    [command, name],
    ...command.commands.flatMap((sub) => named(sub, `${name} ${sub.name()}`)),
  ];
  for (const [command, name] of named(program, 'fleetstream')) command.configureOutput({ outputError: (text, write) => write(oneLine(name, text)) });
  return program;
};

/** commander's codes of what ends well: the help asked for, the version. */
const DONE = new Set(['commander.helpDisplayed', 'commander.version']);

/**
 * Runs `fleetstream` on its arguments (without node's and the script's): resolves with 0 when the
 * command's action finished or the help was asked for, with 2 after a usage error (an unknown
 * option, a missing or bad value: the code the CLIs always gave it). A command that
 * keeps running (`start`, `device`) goes on after this resolves, and exits by itself.
 */
export const runFleetstream = async (args: string[], output?: Pick<OutputConfiguration, 'writeOut' | 'writeErr'>): Promise<number> => {
  try {
    await buildProgram(output).parseAsync(args, { from: 'user' });
    return 0;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // `--help` and `help <cmd>` end well; the help shown because no command was named is a usage error.
    return DONE.has(error.code) || (error.code === 'commander.help' && error.exitCode === 0) ? 0 : USAGE_ERROR.exitCode;
  }
};
