/**
 * `fsched console [--local | --endpoints FILE | --stack NAME [--region R]] [--port N] [--read-only] [--by NAME]`:
 * opens the target and reads the deployed job config exactly as the ops commands do
 * (openTarget, loadJobConfig), then serves the console on 127.0.0.1 and prints its address.
 */
import { HelpRequest, noExtraPositionals, operatorOf, parseCommand, parsePositive, stringOption } from '../ops/args.js';
import { clockOf, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, OpsFailure, UsageError, type OpsIo } from '../ops/io.js';
import { ioForTarget, loadJobConfig } from '../ops/job-config.js';
import { openTarget, type Target } from '../ops/target.js';
import { startConsole, type RunningConsole } from './server.js';

export const CONSOLE_USAGE =
  'usage: fsched console [--local | --endpoints FILE | --stack NAME [--region R]] [--port N] [--read-only] [--by NAME]';

const CONSOLE_OPTIONS = {
  port: { type: 'string' },
  'read-only': { type: 'boolean', default: false },
  by: { type: 'string' },
} as const;

export interface OpenConsole extends RunningConsole {
  readonly target: Target;
}

/** Parses the arguments, opens the target, starts the server; the caller closes it. */
export async function openConsole(argv: readonly string[], io: OpsIo): Promise<OpenConsole> {
  const { values, positionals } = parseCommand(argv, CONSOLE_OPTIONS);
  noExtraPositionals(positionals, 0);
  const rawPort = stringOption(values, 'port');
  const port = rawPort === undefined ? 0 : parsePositive(rawPort, 'port', 0, { integer: true, max: 65_535 });
  const by = operatorOf(values, io);
  const target = await openTarget(values, io);
  // As runOps: the checkout's jobs compared with the deployed ones follow the target.
  const targetIo = ioForTarget(io, target);
  try {
    const config =
      io.jobs === undefined
        ? await loadJobConfig(target, targetIo)
        : { jobs: io.jobs, source: 'the given jobs', checkoutJobs: io.checkoutJobs ?? io.jobs };
    if ('warning' in config && config.warning !== undefined) io.stderr(config.warning);
    const running = await startConsole(
      {
        target,
        jobs: config.jobs,
        jobSource: config.source,
        checkoutJobs: config.checkoutJobs,
        readOnly: values['read-only'] === true,
        by,
        now: clockOf(io),
      },
      { port, log: io.stderr },
    );
    return {
      ...running,
      target,
      close: async () => {
        try {
          await running.close();
        } finally {
          target.destroy();
        }
      },
    };
  } catch (error) {
    target.destroy();
    throw error;
  }
}

/** The command: serves until SIGINT or SIGTERM. */
export async function runConsole(argv: readonly string[], io: OpsIo): Promise<number> {
  let running: OpenConsole;
  try {
    running = await openConsole(argv, io);
  } catch (error) {
    if (error instanceof HelpRequest) {
      io.stdout(CONSOLE_USAGE);
      io.stdout('  --port N      the port on 127.0.0.1 (default: a free one, printed)');
      io.stdout('  --read-only   show everything, offer and accept no action');
      io.stdout('  --by NAME     who the actions are recorded as (default: $USER)');
      return EXIT_OK;
    }
    if (error instanceof UsageError) {
      io.stderr(`console: ${error.message}`);
      return EXIT_USAGE;
    }
    if (error instanceof OpsFailure) {
      io.stderr(`console: ${error.message}`);
      return EXIT_FAILURE;
    }
    throw error;
  }
  io.stdout(`console: ${running.url} (${running.target.description})${argv.includes('--read-only') ? ', read-only' : ''}; Ctrl-C stops it`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await running.close();
  return EXIT_OK;
}
