/**
 * `ops backfill <job> --from ISO --to ISO [--max-per-second 10] [--dry-run] [--force] [--allow-superseded]`:
 * creates the runs of the job's slots in [from, to) that do not exist yet and dispatches them
 * (shared/backfill.ts). Idempotent: a second identical call creates nothing. Refuses a range that
 * reaches into the future, without --force a range of more than 10,000 slots, and without
 * --allow-superseded a latest-wins job (every backfilled run would be superseded); a dry run
 * prints that warning on stderr.
 */
import { backfill, BackfillRequestError, planBackfill, supersededWarning, BACKFILL_DEFAULT_RATE, type BackfillReport } from '../../shared/backfill.js';
import { configuredJob, noExtraPositionals, parseCommand, parseInstant, parsePositive, requireOption, stringOption } from './args.js';
import { clockOf, EXIT_OK, iso, printJson, sleepOf, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const backfillUsage = 'backfill <job> --from ISO --to ISO [--max-per-second 10] [--dry-run] [--force] [--allow-superseded]';

export async function backfillCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    from: { type: 'string' },
    to: { type: 'string' },
    'max-per-second': { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    force: { type: 'boolean', default: false },
    'allow-superseded': { type: 'boolean', default: false },
  });
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const from = parseInstant(requireOption(values, 'from'), 'from');
  const to = parseInstant(requireOption(values, 'to'), 'to');
  const maxPerSecond = parsePositive(stringOption(values, 'max-per-second'), 'max-per-second', BACKFILL_DEFAULT_RATE, { max: 10_000 });
  const clock = clockOf(io);
  const request = { job, from, to, maxPerSecond, dryRun: values['dry-run'] === true, force: values.force === true, allowSuperseded: values['allow-superseded'] === true };
  // Check the range before touching any stack.
  let slots: number[];
  try {
    slots = planBackfill(request, clock());
  } catch (error) {
    if (error instanceof BackfillRequestError) throw new UsageError(error.field, error.message);
    throw error;
  }
  // Asked for anyway (or only counted): the operator still reads what the runs will do.
  const superseded = supersededWarning(job, slots.length * job.shards);
  if (superseded !== undefined) io.stderr(`ops backfill: warning: ${superseded}`);

  const result = await withTarget(values, io, async (target): Promise<BackfillReport & { alreadyInLedger?: number }> => {
    if (request.dryRun) {
      const existing = await target.ops.existingRunKeys(job.name, from, to);
      const report = await backfill({ ledger: target.ledger, queue: target.queue, clock, sleep: sleepOf(io) }, request);
      return { ...report, alreadyInLedger: existing.size };
    }
    return backfill({ ledger: target.ledger, queue: target.queue, clock, sleep: sleepOf(io) }, request);
  });

  if (values.json) {
    printJson(io, { ...result, from: iso(result.from), to: iso(result.to), firstSlot: iso(result.firstSlot), lastSlot: iso(result.lastSlot) });
    return EXIT_OK;
  }
  const range = `${iso(from)} to ${iso(to)}`;
  if (result.dryRun) {
    const runs = result.runs;
    const existing = result.alreadyInLedger ?? 0;
    io.stdout(
      `dry run: ${job.name} has ${slots.length} slot(s) (${runs} run(s)) in [${range}); ${existing} already in the ledger, ` +
        `${Math.max(0, runs - existing)} would be created at ${maxPerSecond}/s (~${Math.ceil(Math.max(0, runs - existing) / maxPerSecond)} s)`,
    );
    if (slots.length > 0) io.stdout(`first ${iso(result.firstSlot)}, last ${iso(result.lastSlot)}`);
    return EXIT_OK;
  }
  io.stdout(`backfilled ${job.name} [${range}): ${result.created} created, ${result.existing} already existed, ${result.sent} dispatched`);
  return EXIT_OK;
}
