/**
 * `ops trigger <job> [--shard N] [--note TEXT] [--overlap POLICY] [--by NAME] [--idempotency-key K]`:
 * run a job now, once, outside its schedule (shared/operations/trigger.ts): its own run key (the trigger's
 * millisecond), fenced like any run, under the job's overlap policy unless --overlap overrides it,
 * also while the job is paused. `ops runs` shows it as manual, with its note.
 *
 * Exit 0 names the runs that exist and will run (sent now, or by the sweeper when the send
 * failed). A failure (exit 1) before any run was known to be created prints the idempotency key
 * (generated when none was given): repeating the command with it creates at most one run.
 */
import type { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import { randomUUID } from 'node:crypto';
import { trigger, TriggerRequestError, type TriggerReport } from '../../shared/operations/trigger.js';
import { configuredJob, noExtraPositionals, operatorOf, parseCommand, stringOption } from './args.js';
import { clockOf, EXIT_OK, OpsFailure, printJson, printTable, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const triggerUsage =
  'trigger <job> [--shard N] [--note TEXT] [--overlap forbid-skip|forbid-queue|coalesce|replace|parallel] [--by NAME] [--idempotency-key K]';

export async function triggerCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    shard: { type: 'string' },
    note: { type: 'string' },
    overlap: { type: 'string' },
    by: { type: 'string' },
    'idempotency-key': { type: 'string' },
  });
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const rawShard = stringOption(values, 'shard');
  // Only the number's form is checked here; its range, like the overlap policy, is triggerRun's rule.
  if (rawShard !== undefined && !/^\d+$/.test(rawShard)) throw new UsageError('shard', `must be a whole number, got "${rawShard}"`);
  const shard = rawShard === undefined ? undefined : Number(rawShard);
  const overlap = stringOption(values, 'overlap');
  const by = operatorOf(values, io);
  const note = stringOption(values, 'note')?.trim() || undefined;
  const given = stringOption(values, 'idempotency-key');
  const idempotencyKey = given ?? `auto-${randomUUID()}`;
  let report: TriggerReport;
  try {
    report = await withTarget(values, io, (target) =>
      trigger(
        { ledger: target.ledger, queue: target.queue, clock: clockOf(io) },
        { job, shard, note, overlap: overlap as OverlapPolicy | undefined, by, idempotencyKey },
      ),
    );
  } catch (error) {
    if (error instanceof TriggerRequestError) throw new UsageError(error.field, error.message);
    if (error instanceof UsageError || error instanceof OpsFailure) throw error;
    // A write may have committed before its answer was lost: only the key can tell.
    throw new OpsFailure(
      `trigger of ${job.name} failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; repeat with --idempotency-key ${idempotencyKey} (it creates at most one run)`,
    );
  }
  const { runs } = report;
  if (report.sendError !== undefined) {
    io.stderr(
      `could not send the run message(s) (${report.sendError}): the run(s) are READY and watched, the sweeper dispatches them after its grace (2 min)`,
    );
  }
  if (values.json) {
    printJson(
      io,
      runs.map((r) => ({
        runKey: r.runKey,
        slot: new Date(r.slot).toISOString(),
        shard: r.shard,
        origin: r.origin,
        note: r.note,
        triggeredBy: r.triggeredBy,
        overlap: r.overlap ?? job.overlap,
        status: r.status,
        idempotencyKey,
        repeated: report.repeated,
        dispatched: report.sendError === undefined ? 'now' : 'by the sweeper',
      })),
    );
    return EXIT_OK;
  }
  printTable(
    io,
    ['RUN KEY', 'SHARD', 'OVERLAP', 'NOTE'],
    runs.map((r) => [r.runKey, r.shard, r.overlap ?? job.overlap, r.note]),
  );
  const how = report.sendError === undefined ? 'dispatched now' : 'not sent: the sweeper dispatches them';
  io.stdout(
    report.repeated
      ? `already triggered with idempotency key ${idempotencyKey}: ${runs.length} manual run(s) of ${job.name}, no new run created (${report.sent} waiting run(s) sent again)`
      : `triggered ${runs.length} manual run(s) of ${job.name}, ${how}`,
  );
  return EXIT_OK;
}
