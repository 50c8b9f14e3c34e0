/**
 * The ops CLI's dispatcher, callable in-process: `runOps(argv, io)` returns the exit code.
 * 0 ok · 1 the operation failed or was refused · 2 usage error or bad input (one line naming the field).
 */
import { parseArgs } from 'node:util';
import { OPS_ACCESS } from '../../infra/iam-access.js';
import { COMMON_OPTIONS, COMMON_USAGE, HelpRequest, parseCommand } from './args.js';
import { backfillCommand, backfillUsage } from './backfill.js';
import { commandHelp, PROGRAM } from './help.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, OpsFailure, UsageError, type OpsIo } from './io.js';
import { jobsCommand, jobsUsage } from './jobs.js';
import { pauseCommand, pauseUsage, resumeCommand, resumeUsage } from './pause.js';
import { previewCommand, previewUsage } from './preview.js';
import { redriveCommand, redriveUsage } from './redrive.js';
import { resolveCommand, resolveUsage } from './resolve.js';
import { retryCommand, retryUsage } from './retry.js';
import { triggerCommand, triggerUsage } from './trigger.js';
import { runsCommand, runsUsage } from './runs.js';
import { showCommand, showUsage } from './show.js';
import { statusCommand } from './status.js';
import { ioForTarget, loadJobConfig } from './job-config.js';
import { openTarget, type Target } from './target.js';

export type OpsCommand = (args: readonly string[], io: OpsIo) => Promise<number>;

export const COMMANDS: Readonly<Record<string, { readonly run: OpsCommand; readonly usage: string; readonly summary: string }>> = {
  status: {
    run: statusCommand,
    usage: 'status [--since 24h]',
    summary: 'per job: watermark, last run, runs by state, oldest open run, paused (by whom, why); DLQ depth',
  },
  jobs: {
    run: jobsCommand,
    usage: jobsUsage,
    summary: 'per job: schedule and zone, paused/finished, next 3 fire times, last run, open runs, DEAD runs in 24 h',
  },
  runs: { run: runsCommand, usage: runsUsage, summary: 'runs of one job or of every configured job (e.g. --state DEAD), newest first' },
  show: { run: showCommand, usage: showUsage, summary: 'every field of one run, then its attempts (claim, owner, fence, how each ended)' },
  pause: { run: pauseCommand, usage: pauseUsage, summary: 'stop planning a job (the note and who paused it show in status and jobs)' },
  resume: { run: resumeCommand, usage: resumeUsage, summary: 'plan a paused job again (missed slots follow its misfire policy)' },
  backfill: {
    run: backfillCommand,
    usage: backfillUsage,
    summary: 'create and dispatch the runs of a past range, idempotently, rate-limited',
  },
  preview: { run: previewCommand, usage: previewUsage, summary: 'list the slots of a schedule (no stack needed)' },
  redrive: {
    run: redriveCommand,
    usage: redriveUsage,
    summary: 'revive DEAD runs of the DLQ messages, then move them back to the run queue; --drop ID deletes one junk message',
  },
  trigger: { run: triggerCommand, usage: triggerUsage, summary: 'run a job now, once, outside its schedule (also while paused)' },
  retry: {
    run: retryCommand,
    usage: retryUsage,
    summary: 'run DEAD runs again with a fresh attempt budget (reconciling first where the last result is unknown)',
  },
  resolve: { run: resolveCommand, usage: resolveUsage, summary: 'close a run by hand as succeeded (MANUAL) or dead' },
};

/** A command touches a stack exactly when the operators' policy has a row for it (preview has none). */
function hasTarget(name: string): boolean {
  return Object.hasOwn(OPS_ACCESS, name);
}

/** A command's own option table: it hands it over when asked for help (before anything else). */
async function optionsOf(run: OpsCommand): Promise<HelpRequest['options']> {
  try {
    await run(['--help'], { stdout: () => undefined, stderr: () => undefined });
  } catch (error) {
    if (error instanceof HelpRequest) return error.options;
    throw error;
  }
  throw new Error('the command did not hand over its options when asked for help');
}

export function usage(): string[] {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  return [
    `usage: ${PROGRAM} <command> [options]   (in the project: npx ${PROGRAM} …, or ./bin/fsched ops …)`,
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}\n  ${' '.repeat(width)}  ${c.usage}`),
    '',
    `target (every command but preview): ${COMMON_USAGE}`,
    '  default: AWS, default credential chain, stack FencedScheduler outputs; --local: the running `npm start`',
    `${PROGRAM} <command> --help: every flag of the command, with its default`,
  ];
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split('\n')[0] ?? '').trim() || (error instanceof Error ? error.name : 'error');
}

export async function runOps(argv: readonly string[], io: OpsIo): Promise<number> {
  // Only the command name is read here (the first positional; a value of a target option is
  // not one); each command parses its own options strictly.
  const { tokens } = parseArgs({ args: [...argv], strict: false, allowPositionals: true, tokens: true });
  const takesValue = new Set(
    Object.entries(COMMON_OPTIONS)
      .filter(([, o]) => o.type === 'string')
      .map(([k]) => k),
  );
  let first: { value: string; index: number } | undefined;
  for (let i = 0; i < tokens.length && !first; i++) {
    const token = tokens[i]!;
    if (token.kind === 'positional') {
      const previous = tokens[i - 1];
      const isValue =
        previous?.kind === 'option' && takesValue.has(previous.name) && previous.value === undefined && previous.index === token.index - 1;
      if (!isValue) first = { value: token.value, index: token.index };
    }
  }
  const wantsHelp = tokens.some((t) => t.kind === 'option' && (t.name === 'help' || t.name === 'h'));
  if (!first) {
    if (wantsHelp) {
      for (const line of usage()) io.stdout(line);
      return EXIT_OK;
    }
    io.stderr('ops: a command is required: one of ' + Object.keys(COMMANDS).join(', ') + ' (--help for usage)');
    return EXIT_USAGE;
  }
  const name = first.value;
  const command = COMMANDS[name];
  if (!command) {
    io.stderr(`ops: field "command": unknown command "${name}"; one of ${Object.keys(COMMANDS).join(', ')}`);
    return EXIT_USAGE;
  }
  const rest = [...argv.slice(0, first.index), ...argv.slice(first.index + 1)];
  if (wantsHelp) {
    // The command parses its arguments first thing; asked for help, it hands over its option table.
    try {
      await command.run(['--help'], io);
    } catch (error) {
      if (!(error instanceof HelpRequest)) throw error;
      for (const line of commandHelp(name, command, error.options)) io.stdout(line);
      return EXIT_OK;
    }
    io.stderr(`ops ${name}: no help for this command`);
    return EXIT_FAILURE;
  }
  let commandIo: OpsIo = io;
  let target: Target | undefined;
  try {
    // The command acts on the jobs its target runs: open the target and read the deployed config
    // first (once; the command reuses the target). Given jobs (tests) are used as they are.
    if (hasTarget(name) && commandIo.jobs === undefined) {
      const { values } = parseCommand(rest, await optionsOf(command.run));
      target = await openTarget(values, commandIo);
      commandIo = ioForTarget(commandIo, target);
      const config = await loadJobConfig(target, commandIo);
      if (config.warning !== undefined) io.stderr(config.warning);
      commandIo = { ...commandIo, jobs: config.jobs, jobSource: config.source, checkoutJobs: config.checkoutJobs, target };
    }
    return await command.run(rest, commandIo);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`ops ${name}: ${oneLine(error)}`);
      return EXIT_USAGE;
    }
    if (error instanceof OpsFailure) {
      io.stderr(`ops ${name}: ${oneLine(error)}`);
      return EXIT_FAILURE;
    }
    io.stderr(`ops ${name}: ${oneLine(error)}`);
    return EXIT_FAILURE;
  } finally {
    target?.destroy();
  }
}
