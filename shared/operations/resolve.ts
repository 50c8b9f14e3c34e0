/**
 * Resolve (`ops resolve`, the console's Resolve): close a run by hand.
 *
 * Reads the run (consistent) and refuses when it is already terminal other than DEAD, or RUNNING
 * with a lease not past its end by the takeover margin on the caller's clock: an operator's clock
 * is not a worker's. `force` takes over a RUNNING run anyway. Otherwise one conditional update on
 * the status and fencing token it read (a worker that claimed meanwhile wins and the resolve is
 * refused); a RUNNING run's fence advances, so its old holder, if alive, has every heartbeat and
 * outcome refused and stops:
 *   as succeeded → MANUAL, with resolution { as, reason, by, at, from }; out of the watch index;
 *   as dead      → DEAD, lastError { code: RESOLVED, message: reason }, same resolution record.
 * Either way a message that later arrives for the run is acked as a duplicate, and for an
 * exclusive job the lane is freed and its next waiting run dispatched (`laneHandOn`).
 */
import type { Ledger } from '../store/ledger.js';
import { resolveRefusal, type LedgerOps, type ResolveAs } from '../store/repairs.js';
import type { RunQueue } from '../messaging/run-queue.js';
import type { Job } from '../schedule/job-schema-core.js';
import type { Run, RunId } from '../core/vocabulary.js';
import { InMemoryMetrics } from '../runtime/observability.js';
import { runEnded } from '../worker/run-ended.js';

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

/** What a resolve came to: the run closed, or why not, in one line. */
export type ResolveOutcome =
  | { readonly ok: true; readonly before: Run; readonly after: Run }
  | { readonly ok: false; readonly why: 'missing' | 'refused' | 'changed'; readonly message: string };

/** The lane hand-on for resolved runs of exclusive jobs. */
export function laneHandOn(
  ledger: Ledger,
  queue: Pick<RunQueue, 'send'>,
  jobs: readonly Job[],
  clock: () => number,
): (run: Run) => Promise<void> {
  return async (run) => {
    const job = jobs.find((j) => j.name === run.job);
    if (job) await runEnded({ ledger, queue, clock, metrics: new InMemoryMetrics() }, job, run);
  };
}

export async function resolve(deps: ResolveDeps, request: ResolveRequest): Promise<ResolveOutcome> {
  const label = `${request.id.job}@${new Date(request.id.slot).toISOString()}${request.id.shard ? `#${request.id.shard}` : ''}`;
  const seen = await deps.ledger.getRun(request.id, true);
  if (!seen) return { ok: false, why: 'missing', message: `no run ${label} in the ledger` };
  const now = deps.clock();
  const refusal = resolveRefusal(seen, now, deps.ops.takeoverMarginMs, { force: request.force });
  if (refusal) return { ok: false, why: 'refused', message: `refused: ${refusal}` };
  const result = await deps.ops.resolveRun(
    seen,
    { as: request.as, reason: request.reason, by: request.by, at: now },
    { force: request.force },
  );
  if (!result.ok) {
    const current = result.current;
    return {
      ok: false,
      why: 'changed',
      message: `refused: ${seen.runKey} changed while resolving (was ${seen.status} token ${seen.fencingToken}, now ${current?.status ?? 'gone'} token ${current?.fencingToken ?? '?'}): read it again with \`ops show\``,
    };
  }
  await deps.handOn?.(seen);
  return { ok: true, before: seen, after: result.run };
}
