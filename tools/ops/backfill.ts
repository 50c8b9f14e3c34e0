/**
 * `ops backfill <job> --from ISO --to ISO [--max-per-second 10] [--dry-run] [--force] [--allow-superseded]`:
 * creates the runs of the job's slots in [from, to) that do not exist yet and dispatches them
 * (shared/operations/backfill.ts). Idempotent: a second identical call creates nothing. Refuses a range that
 * reaches into the future, without --force a range of more than 10,000 slots, and without
 * --allow-superseded a latest-wins job (every backfilled run would be superseded). `--dry-run`
 * counts any range (and says when the backfill itself would need --force), and prints the
 * latest-wins warning on stderr.
 */
import {
  backfill,
  BACKFILL_DEFAULT_RATE,
  BACKFILL_MAX_SLOTS,
  BackfillRequestError,
  checkBackfill,
  planBackfill,
  supersededWarning,
  type BackfillReport,
} from '../../shared/operations/backfill.js';
import { configuredJob, noExtraPositionals, parseCommand, parseInstant, parsePositive, requireOption, stringOption } from './args.js';
import { clockOf, EXIT_OK, formatAge, iso, printJson, sleepOf, UsageError, type OpsIo } from './io.js';
import { withTarget, type Target } from './target.js';

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
  const request = {
    job,
    from,
    to,
    maxPerSecond,
    dryRun: values['dry-run'] === true,
    force: values.force === true,
    allowSuperseded: values['allow-superseded'] === true,
  };
  // Check the request before touching any stack (a dry run is counted, not capped).
  try {
    if (request.dryRun) checkBackfill(request, clock());
    else planBackfill(request, clock());
  } catch (error) {
    if (error instanceof BackfillRequestError) throw new UsageError(error.field, error.message);
    throw error;
  }
  const deps = (target: Target) => ({ ledger: target.ledger, queue: target.queue, clock, sleep: sleepOf(io) });
  const result = await withTarget(values, io, async (target): Promise<BackfillReport & { alreadyInLedger?: number }> => {
    if (!request.dryRun) return backfill(deps(target), request);
    const [report, counts] = await Promise.all([
      backfill(deps(target), request),
      target.ops.countRuns(job.name, { sinceSlot: from, untilSlot: to }),
    ]);
    return { ...report, alreadyInLedger: Object.values(counts).reduce((sum, n) => sum + n, 0) };
  });
  // Asked for anyway (or only counted): the operator still reads what the runs will do.
  const superseded = supersededWarning(job, result.runs);
  if (superseded !== undefined) io.stderr(`ops backfill: warning: ${superseded}`);

  if (values.json) {
    printJson(io, {
      ...result,
      from: iso(result.from),
      to: iso(result.to),
      firstSlot: iso(result.firstSlot),
      lastSlot: iso(result.lastSlot),
    });
    return EXIT_OK;
  }
  const range = `${iso(from)} to ${iso(to)}`;
  if (result.dryRun) {
    const runs = result.runs;
    const existing = result.alreadyInLedger ?? 0;
    const toCreate = Math.max(0, runs - existing);
    io.stdout(
      `dry run: ${job.name} has ${result.slots} slot(s) (${runs} run(s)) in [${range}); ${existing} already in the ledger, ` +
        `${toCreate} would be created at ${maxPerSecond}/s (~${formatAge(Math.ceil(toCreate / maxPerSecond) * 1000)})`,
    );
    if (result.slots > 0) io.stdout(`first ${iso(result.firstSlot)}, last ${iso(result.lastSlot)}`);
    if (result.slots > BACKFILL_MAX_SLOTS && !request.force)
      io.stdout(`the range holds more than ${BACKFILL_MAX_SLOTS} slots: the backfill itself needs --force`);
    return EXIT_OK;
  }
  io.stdout(`backfilled ${job.name} [${range}): ${result.created} created, ${result.existing} already existed, ${result.sent} dispatched`);
  return EXIT_OK;
}
