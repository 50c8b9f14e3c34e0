/**
 * A takeover staged with the real worker (processBatch, the real ledger), so the console's
 * screenshots and its browser test show one as it happens in production:
 *
 *   1. worker-frozen claims a manual run of the job and freezes mid-run: its timers stop (no
 *      heartbeat, no timeout), as a paused container's do;
 *   2. worker-successor, whose clock is past the frozen worker's lease, takes the run over, asks
 *      the handler's reconcile (the effect never landed: not done), runs it and succeeds, its
 *      effect written under its newer token;
 *   3. worker-frozen wakes and writes its effect: the successor's token fences it out, so it
 *      records no outcome and leaves the note on its own claim's entry.
 *
 * The job's lease is shortened to a few seconds for the staging (the workers are handed a copy),
 * so the successor's clock runs only that far ahead. Nothing is sent to the run queue: the run is
 * claimed at once, and its slot lies before the planner's sweep window.
 */
import { ReconcileOutcome, type JobHandler, type RunContext } from '../../shared/handler-api.js';
import type { Timers } from '../../shared/core/concurrency.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunOrigin, RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { processBatch, type WorkerDeps } from '../../shared/worker/batch.js';

/** The lease the staged workers are handed (ms): the successor's clock runs this far ahead, and a little more. */
const STAGED_LEASE_MS = 3_000;

/** Timers that never fire: a frozen worker's heartbeats, watchdog and timeout. */
const STOPPED: Timers = {
  setTimeout: () => undefined,
  clearTimeout: () => undefined,
  setInterval: () => undefined,
  clearInterval: () => undefined,
};

export interface StagedTakeover {
  readonly runKey: string;
  readonly slot: number;
  /** The frozen worker's token, and the successor's. */
  readonly frozenToken: number;
  readonly successorToken: number;
}

export type StageDeps = Pick<WorkerDeps, 'ledger' | 'queue' | 'doc' | 'tables'>;

/** Stages the takeover on a new manual run of `job` at `slot` (shard 0 of 1), and returns once both workers are done. */
export async function stageTakeover(deps: StageDeps, job: Job, slot: number): Promise<StagedTakeover> {
  const runKey = runKeyOf(job.name, slot, 0, 1);
  const effect = { pk: 'STAGED#takeover', sk: runKey };
  await deps.ledger.createRun(
    {
      job: job.name,
      slot,
      shard: 0,
      shards: 1,
      status: RunStatus.READY,
      origin: RunOrigin.MANUAL,
      triggeredBy: 'staged-takeover',
      note: 'a worker froze mid-run; another took it over',
    },
    Date.now(),
  );
  const write = (ctx: RunContext) =>
    ctx.fenced.put({ table: ctx.tables.payments, item: { ...effect, token: ctx.fencingToken, by: ctx.runKey } });
  const reconcile: JobHandler['reconcile'] = async (ctx) => {
    const found = await ctx.reader.get(ctx.tables.payments, effect);
    return found ? { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { token: found.token } } : { outcome: ReconcileOutcome.NOT_DONE };
  };
  let started!: () => void;
  const frozen = new Promise<void>((resolve) => (started = resolve));
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const frozenHandler: JobHandler = {
    async run(ctx) {
      started();
      await woken;
      await write(ctx);
    },
    reconcile,
  };
  const successorHandler: JobHandler = {
    async run(ctx) {
      await write(ctx);
      return { evidence: { wrote: effect.sk } };
    },
    reconcile,
  };
  const staged: Job = { ...job, lease: STAGED_LEASE_MS, heartbeatEvery: STAGED_LEASE_MS / 3 };
  const base = (owner: string, handler: JobHandler): WorkerDeps => ({
    ...deps,
    jobs: new Map([[job.name, staged]]),
    handlers: { [job.handler]: handler },
    owner,
    clock: Date.now,
    logger: new JsonLineLogger(() => undefined),
    metrics: new InMemoryMetrics(),
  });
  const record = {
    messageId: `staged-${slot}`,
    receiptHandle: `staged-${slot}`,
    body: JSON.stringify(messageFor({ job: job.name, slot, shard: 0, runKey })),
  };
  const holder = processBatch({ ...base('worker-frozen', frozenHandler), timers: STOPPED }, [record]);
  await frozen;
  // Past the frozen worker's lease and the clock allowance (at most 2 s) by a second.
  const ahead = STAGED_LEASE_MS + 3_000;
  const successor = await processBatch({ ...base('worker-successor', successorHandler), clock: () => Date.now() + ahead }, [record]);
  if (successor.batchItemFailures.length > 0) throw new Error(`the successor did not complete ${runKey}`);
  wake();
  await holder;
  const run = await deps.ledger.getRun({ job: job.name, slot, shard: 0 });
  const [first, second] = run?.attempts ?? [];
  if (run?.status !== RunStatus.SUCCEEDED || first?.fencedOut === undefined || second?.from !== RunStatus.RUNNING)
    throw new Error(`the staged takeover of ${runKey} did not go as staged: ${JSON.stringify(run)}`);
  return { runKey, slot, frozenToken: first.token, successorToken: second.token };
}
