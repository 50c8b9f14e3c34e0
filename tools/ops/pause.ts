/**
 * `ops pause <job>` / `ops resume <job>`: flip the job in its planner partition's watermark item
 * (Ledger.pauseJob / resumeJob, partition = partitionOf(name, partitions)).
 *
 * While paused the planner materializes nothing for the job, and the item remembers where the job
 * stopped (`behind`). On resume the planner plans from there: slots older than `misfire.after` are
 * misfires and follow the job's misfire policy (skip → SKIPPED runs, latest → the newest one only,
 * all → every one, at most maxPerTick per tick); the newer ones run as on-time slots. Runs already
 * materialized before the pause (up to the lookahead) still execute.
 */
import type { Job } from '../../shared/core/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { configuredJob, noExtraPositionals, parseCommand } from './args.js';
import { clockOf, EXIT_OK, iso, printJson, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const pauseUsage = 'pause <job>';
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
  const { values, positionals } = parseCommand(args, {});
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const now = clockOf(io)();
  const result = await withTarget(values, io, async (target) => {
    if (!target.partitionsKnown) io.stderr(`warning: planner partition count unknown, assuming 1 (pass --partitions N to match the deployed planner)`);
    const of = target.partitions;
    const partition = partitionOf(job.name, of);
    const before = await target.ledger.readPartition(partition, of);
    if (before.plannedUntil === undefined) {
      io.stderr(`warning: partition ${partition}/${of} has never been planned: check --partitions matches the deployed planner`);
    }
    const wasPaused = before.paused.has(job.name);
    let changed: boolean;
    if (action === 'pause') {
      await target.ledger.pauseJob(partition, of, job.name, now);
      changed = !wasPaused;
    } else {
      changed = await target.ledger.resumeJob(partition, of, job.name);
    }
    const after = await target.ledger.readPartition(partition, of);
    return {
      job: job.name,
      action,
      partition,
      of,
      changed,
      paused: after.paused.has(job.name),
      plannedUntil: iso(after.behind.get(job.name) ?? after.plannedUntil),
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
        ? `paused ${job.name} (planner partition ${result.partition}/${result.of}): nothing new is materialized until \`ops resume ${job.name}\`; planned up to ${result.plannedUntil ?? '-'}`
        : `${job.name} was already paused (planned up to ${result.plannedUntil ?? '-'})`,
    );
  } else {
    io.stdout(
      result.changed
        ? `resumed ${job.name} (planner partition ${result.partition}/${result.of}): the next tick plans from ${result.plannedUntil ?? 'now'}; ${misfireSummary(job)}`
        : `${job.name} was not paused`,
    );
  }
  return EXIT_OK;
}

export const pauseCommand = (args: readonly string[], io: OpsIo) => flip(args, io, 'pause');
export const resumeCommand = (args: readonly string[], io: OpsIo) => flip(args, io, 'resume');
