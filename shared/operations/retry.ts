/**
 * Retry (`ops retry`, the console's Retry): run ended runs again after their cause is fixed. DEAD
 * runs (by default; SKIPPED or SUPERSEDED ones on request) get a fresh attempt budget and a new
 * message now:
 * - a run whose last attempt's result is unknown (it ended UNKNOWN or timed out, or its worker
 *   vanished) restarts UNKNOWN: its next claim calls the handler's reconcile first, so an effect
 *   that did land is not applied twice;
 * - every other run restarts READY.
 * Its message is sent now, or, for a run whose fire time is still ahead, delayed to it.
 * Failing runs are acked and recorded DEAD in the ledger, never left in the DLQ, so this (not
 * redrive) is how they run again. Each revival is conditional on the status and token read: a run
 * that changed meanwhile is reported, not touched. A dry run lists what would be revived.
 */
import type { Ledger } from '../store/ledger.js';
import { revivalRefusal, revivalStatus, type LedgerOps } from '../store/repairs.js';
import type { RunQueue } from '../messaging/run-queue.js';
import type { Job } from '../schedule/job-schema-core.js';
import { messageFor } from '../core/run-message.js';
import { delaySecondsFor } from '../planner/planner.js';
import { revivalRefusalInLane, revivedInLane } from './revival-lanes.js';
import { RunStatus, type Run, type RunId } from '../core/vocabulary.js';

/** The ended states a retry may revive. */
export const RETRYABLE_STATES: readonly RunStatus[] = [RunStatus.DEAD, RunStatus.SKIPPED, RunStatus.SUPERSEDED];

export interface RetryEntry {
  readonly runKey: string;
  readonly from: RunStatus;
  /** READY, or UNKNOWN (reconciles first); absent when not revived. */
  readonly to?: RunStatus;
  readonly action: 'revived' | 'would-revive' | 'refused' | 'changed';
  readonly detail?: string;
}

export interface RetryDeps {
  readonly ledger: Pick<Ledger, 'getRun' | 'laneRunsAfter' | 'lanes'>;
  readonly ops: Pick<LedgerOps, 'reviveRun' | 'queryRuns'>;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
}

/**
 * Why a retry would not revive the run, or undefined: its state is not one retried (`states`),
 * its fencing range is spent, or its lane would refuse it on arrival. The console's run page asks
 * the same rule before it offers Retry.
 */
export async function retryRefusal(
  deps: Pick<RetryDeps, 'ledger' | 'clock'>,
  job: Job,
  run: Run,
  states: readonly RunStatus[] = RETRYABLE_STATES,
): Promise<string | undefined> {
  if (!states.includes(run.status))
    return `${run.status}: only ${states.join(', ')} runs are retried here${run.status === RunStatus.SUCCEEDED ? ' (it succeeded)' : ''}`;
  return revivalRefusal(run) ?? (await revivalRefusalInLane(deps.ledger, job, run, deps.clock()));
}

export async function retryRuns(
  deps: RetryDeps,
  job: Job,
  runs: readonly Run[],
  options: { dryRun?: boolean; by?: string; states?: readonly RunStatus[] } = {},
): Promise<RetryEntry[]> {
  const states = options.states ?? [RunStatus.DEAD];
  const entries: RetryEntry[] = [];
  for (const run of runs) {
    const refusal = await retryRefusal(deps, job, run, states);
    if (refusal) {
      entries.push({ runKey: run.runKey, from: run.status, action: 'refused', detail: refusal });
      continue;
    }
    if (options.dryRun) {
      entries.push({ runKey: run.runKey, from: run.status, to: revivalStatus(run), action: 'would-revive' });
      continue;
    }
    const result = await deps.ops.reviveRun(run, { now: deps.clock(), by: options.by, reason: 'ops retry' });
    if (!result.ok) {
      entries.push({
        runKey: run.runKey,
        from: run.status,
        action: 'changed',
        detail: `changed meanwhile: now ${result.current?.status ?? 'gone'}, token ${result.current?.fencingToken ?? '?'}`,
      });
      continue;
    }
    await revivedInLane(deps.ledger, job, result.run, deps.clock());
    // A run whose slot is still ahead (a slot a policy skipped before it came) waits for it, as
    // the planner's message would: the worker waits out at most startLead, so a message sent now
    // would start the handler before its fire time. The revived run is watched, so should this
    // send fail the sweeper dispatches it.
    const fireAt = result.run.fireAt ?? result.run.slot;
    const delaySeconds = delaySecondsFor(job, fireAt, deps.clock());
    await deps.queue.send([{ message: messageFor(result.run), delaySeconds }]);
    const details = [
      ...(delaySeconds > 0 ? [`waits for its fire time ${new Date(fireAt).toISOString()}`] : []),
      ...(result.run.status === RunStatus.UNKNOWN ? ['its last result is unknown: reconciles before running again'] : []),
    ];
    entries.push({
      runKey: run.runKey,
      from: run.status,
      to: result.run.status,
      action: 'revived',
      detail: details.join('; ') || undefined,
    });
  }
  return entries;
}

/** Which runs a retry looks at: one run (any retryable state), or a job's runs in some states. */
export type RetrySelection =
  | { readonly run: RunId }
  | { readonly statuses: readonly RunStatus[]; readonly sinceSlot?: number; readonly untilSlot?: number; readonly limit: number };

/** What a retry came to: an entry per run looked at, or no such run. */
export type RetryOutcome = { readonly ok: true; readonly entries: RetryEntry[] } | { readonly ok: false; readonly why: 'missing' };

export async function retry(
  deps: RetryDeps,
  job: Job,
  selection: RetrySelection,
  options: { dryRun?: boolean; by?: string } = {},
): Promise<RetryOutcome> {
  if ('run' in selection) {
    const run = await deps.ledger.getRun(selection.run);
    if (!run) return { ok: false, why: 'missing' };
    return { ok: true, entries: await retryRuns(deps, job, [run], { ...options, states: RETRYABLE_STATES }) };
  }
  const runs = await deps.ops.queryRuns(job.name, {
    statuses: selection.statuses,
    sinceSlot: selection.sinceSlot,
    untilSlot: selection.untilSlot,
    limit: selection.limit,
  });
  return { ok: true, entries: await retryRuns(deps, job, runs, { ...options, states: selection.statuses }) };
}
