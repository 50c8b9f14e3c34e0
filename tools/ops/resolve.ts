/**
 * `ops resolve <runKey> --as succeeded|dead --reason "…" [--by NAME] [--force]`: close a run by hand.
 *
 * Reads the run (consistent) and refuses, exit 1, when it is already terminal other than DEAD,
 * or RUNNING with a lease not past its end by the takeover margin (60 s) on this machine's clock:
 * an operator's clock is not a worker's. `--force` takes over a RUNNING run anyway. Otherwise one
 * conditional update on the status and fencing token it read (a worker that claimed meanwhile
 * wins and the command refuses); a RUNNING run's fence advances, so its old holder, if alive, has
 * every heartbeat and outcome refused and stops:
 *   --as succeeded → MANUAL, with resolution { as, reason, by, at, from }; out of the watch index;
 *   --as dead      → DEAD, lastError { code: RESOLVED, message: reason }, same resolution record.
 * Either way a message that later arrives for the run is acked as a duplicate, and for an
 * exclusive job the lane is freed and its next waiting run dispatched.
 */
import type { Ledger } from '../../shared/store/ledger.js';
import { resolveRefusal, type LedgerOps, type ResolveAs } from '../../shared/store/repairs.js';
import type { RunQueue } from '../../shared/messaging/run-queue.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import type { Run, RunId } from '../../shared/core/vocabulary.js';
import { InMemoryMetrics } from '../../shared/runtime/observability.js';
import { runEnded, isExclusive } from '../../shared/worker/lanes.js';
import { jobsOf, noExtraPositionals, operatorOf, parseCommand, parseRunKey, requireOption, stringOption } from './args.js';
import { clockOf, EXIT_OK, OpsFailure, printJson, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const resolveUsage = 'resolve <job@slotISO[#shard]> --as succeeded|dead --reason "…" [--by NAME] [--force]';

export interface ResolveRequest {
  readonly id: RunId;
  readonly as: ResolveAs;
  readonly reason: string;
  readonly by: string;
  /** Take over a RUNNING run whose lease does not look expired by the margin. */
  readonly force?: boolean;
}

export interface ResolveDeps {
  readonly ledger: Pick<Ledger, 'getRun'>;
  readonly ops: Pick<LedgerOps, 'resolveRun' | 'takeoverMarginMs'>;
  readonly clock: () => number;
  /** Hands an exclusive job's lane on once its run is closed (frees it, dispatches the next run). @default nothing */
  readonly handOn?: (run: Run) => Promise<void>;
}

/** The lane hand-on for resolved runs of exclusive jobs. */
export function laneHandOn(ledger: Ledger, queue: Pick<RunQueue, 'send'>, jobs: readonly Job[], clock: () => number): (run: Run) => Promise<void> {
  return async (run) => {
    const job = jobs.find((j) => j.name === run.job);
    if (job && isExclusive(job)) await runEnded({ ledger, queue, clock, metrics: new InMemoryMetrics() }, job, run);
  };
}

/** Resolves one run or throws OpsFailure with the one line that says why not. */
export async function resolveRun(deps: ResolveDeps, request: ResolveRequest): Promise<{ before: Run; after: Run }> {
  const label = `${request.id.job}@${new Date(request.id.slot).toISOString()}${request.id.shard ? `#${request.id.shard}` : ''}`;
  const seen = await deps.ledger.getRun(request.id, true);
  if (!seen) throw new OpsFailure(`no run ${label} in the ledger`);
  const now = deps.clock();
  const refusal = resolveRefusal(seen, now, deps.ops.takeoverMarginMs, { force: request.force });
  if (refusal) throw new OpsFailure(`refused: ${refusal}`);
  const result = await deps.ops.resolveRun(seen, { as: request.as, reason: request.reason, by: request.by, at: now }, { force: request.force });
  if (!result.ok) {
    const current = result.current;
    throw new OpsFailure(
      `refused: ${seen.runKey} changed while resolving (was ${seen.status} token ${seen.fencingToken}, now ${current?.status ?? 'gone'} token ${current?.fencingToken ?? '?'}): read it again with \`ops show\``,
    );
  }
  await deps.handOn?.(seen);
  return { before: seen, after: result.run };
}

export async function resolveCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    as: { type: 'string' },
    reason: { type: 'string' },
    by: { type: 'string' },
    force: { type: 'boolean', default: false },
  });
  noExtraPositionals(positionals, 1);
  const id = parseRunKey(positionals[0]);
  const as = requireOption(values, 'as');
  if (as !== 'succeeded' && as !== 'dead') throw new UsageError('as', `must be succeeded or dead, got "${as}"`);
  const reason = requireOption(values, 'reason').trim();
  if (reason === '') throw new UsageError('reason', '--reason must say why');
  const by = operatorOf(values, io);
  const jobs = jobsOf(io);
  const { before, after } = await withTarget(values, io, (target) =>
    resolveRun(
      { ledger: target.ledger, ops: target.ops, clock: clockOf(io), handOn: laneHandOn(target.ledger, target.queue, jobs, clockOf(io)) },
      { id, as, reason, by, force: values.force === true },
    ),
  );
  if (values.json) {
    printJson(io, { runKey: after.runKey, from: before.status, to: after.status, as, reason, by, fencingToken: after.fencingToken });
    return EXIT_OK;
  }
  io.stdout(`resolved ${after.runKey}: ${before.status} → ${after.status} (as ${as}, by ${by}): ${reason}`);
  return EXIT_OK;
}
