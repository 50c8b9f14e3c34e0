/**
 * `ops trigger <job> [--shard N] [--note TEXT] [--overlap POLICY] [--by NAME]`: run a job now,
 * once, outside its schedule (shared/trigger.ts): its own run key (the trigger's millisecond),
 * fenced like any run, under the job's overlap policy unless --overlap overrides it, also while
 * the job is paused. `ops runs` shows it as manual, with its note.
 */
import type { OverlapPolicy } from '../../shared/core/job-schema.js';
import { triggerRun, TriggerRequestError } from '../../shared/trigger.js';
import { configuredJob, noExtraPositionals, parseCommand, stringOption } from './args.js';
import { clockOf, EXIT_OK, printJson, printTable, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const triggerUsage = 'trigger <job> [--shard N] [--note TEXT] [--overlap forbid-skip|forbid-queue|coalesce|replace|parallel] [--by NAME]';

export async function triggerCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    shard: { type: 'string' },
    note: { type: 'string' },
    overlap: { type: 'string' },
    by: { type: 'string' },
  });
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const rawShard = stringOption(values, 'shard');
  // Only the number's form is checked here; its range, like the overlap policy, is triggerRun's rule.
  if (rawShard !== undefined && !/^\d+$/.test(rawShard)) throw new UsageError('shard', `must be a whole number, got "${rawShard}"`);
  const shard = rawShard === undefined ? undefined : Number(rawShard);
  const overlap = stringOption(values, 'overlap');
  const by = stringOption(values, 'by') ?? (io.env ?? process.env).USER ?? 'ops';
  const note = stringOption(values, 'note')?.trim() || undefined;
  let runs;
  try {
    runs = await withTarget(values, io, (target) =>
      triggerRun({ ledger: target.ledger, queue: target.queue, clock: clockOf(io) }, { job, shard, note, overlap: overlap as OverlapPolicy | undefined, by }),
    );
  } catch (error) {
    if (error instanceof TriggerRequestError) throw new UsageError(error.field, error.message);
    throw error;
  }
  if (values.json) {
    printJson(io, runs.map((r) => ({ runKey: r.runKey, slot: new Date(r.slot).toISOString(), shard: r.shard, origin: r.origin, note: r.note, triggeredBy: r.triggeredBy, overlap: r.overlap ?? job.overlap })));
    return EXIT_OK;
  }
  printTable(io, ['RUN KEY', 'SHARD', 'OVERLAP', 'NOTE'], runs.map((r) => [r.runKey, r.shard, r.overlap ?? job.overlap, r.note]));
  io.stdout(`triggered ${runs.length} manual run(s) of ${job.name}, dispatched now`);
  return EXIT_OK;
}
