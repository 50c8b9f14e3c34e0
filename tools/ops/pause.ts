/**
 * `ops pause <job> [--note TEXT] [--by NAME]` / `ops resume <job>`: flip the job's own planning
 * state (PlannerStore.pause / resume): it follows the job whatever the planner's partition count.
 *
 * While paused the planner materializes nothing for the job, and the job's plan item remembers
 * where it stopped and who paused it and why (shown by `status` and `jobs`). On resume the planner
 * plans from there: slots older than `misfire.after` are misfires and follow the job's misfire
 * policy (skip → SKIPPED runs, latest → the newest one only, all → every one, at most maxPerTick
 * per tick); the newer ones run as on-time slots, never one from before the job was first planned.
 * Runs already materialized before the pause (up to the lookahead) still execute.
 */
import { jobPlanning } from '../../shared/store/planner-state.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { configuredJob, noExtraPositionals, operatorOf, parseCommand, stringOption } from './args.js';
import { clockOf, EXIT_OK, iso, printJson, type OpsIo } from './io.js';
import { PROGRAM } from './help.js';
import { withTarget } from './target.js';

export const pauseUsage = 'pause <job> [--note TEXT] [--by NAME]';
export const resumeUsage = 'resume <job>';

export function misfireSummary(job: Job): string {
  const { policy, after, maxPerTick } = job.misfire;
  const what =
    policy === 'skip'
      ? 'are recorded as SKIPPED runs'
      : policy === 'latest'
        ? 'collapse into one run of the newest'
        : `all run, at most ${maxPerTick} per tick`;
  return `slots missed more than ${Math.round(after / 1000)}s ago ${what} (misfire policy "${policy}")`;
}

async function flip(args: readonly string[], io: OpsIo, action: 'pause' | 'resume'): Promise<number> {
  const { values, positionals } = parseCommand(args, action === 'pause' ? { note: { type: 'string' }, by: { type: 'string' } } : {});
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const now = clockOf(io)();
  const by = operatorOf(values, io);
  const note = stringOption(values, 'note')?.trim() || undefined;
  const result = await withTarget(values, io, async (target) => {
    const planning = target.ledger.planning;
    const before = (await jobPlanning(planning, [job.name], partitionOf)).get(job.name)!;
    if (before.of === undefined) io.stderr('warning: the planner has never run against this ledger: the pause applies from its first tick');
    const changed = action === 'pause' ? await planning.pause(job.name, before.plannedUntil ?? now, { by, note, at: now }) : await planning.resume(job.name);
    const after = (await jobPlanning(planning, [job.name], partitionOf)).get(job.name)!;
    return {
      job: job.name,
      action,
      changed,
      paused: after.pause !== undefined,
      pausedBy: after.pause?.by,
      pausedAt: after.pause?.at ? iso(after.pause.at) : undefined,
      pauseNote: after.pause?.note,
      plannedUntil: iso(after.plannedUntil),
      misfire: job.misfire,
    };
  });
  if (values.json) {
    printJson(io, result);
    return EXIT_OK;
  }
  if (action === 'pause') {
    io.stdout(
      result.changed
        ? `paused ${job.name}${note ? ` (${note})` : ''}: nothing new is materialized until \`${PROGRAM} resume ${job.name}\`; planned up to ${result.plannedUntil ?? '-'}`
        : `${job.name} was already paused by ${result.pausedBy ?? '?'} at ${result.pausedAt ?? '?'}${result.pauseNote ? ` (${result.pauseNote})` : ''}: the first pause's note stays; planned up to ${result.plannedUntil ?? '-'}`,
    );
  } else {
    io.stdout(
      result.changed
        ? `resumed ${job.name}: the next tick plans from ${result.plannedUntil ?? 'now'}; ${misfireSummary(job)}`
        : `${job.name} was not paused`,
    );
  }
  return EXIT_OK;
}

export const pauseCommand = (args: readonly string[], io: OpsIo) => flip(args, io, 'pause');
export const resumeCommand = (args: readonly string[], io: OpsIo) => flip(args, io, 'resume');
