/**
 * `ops retry <runKey>` or `ops retry --job J [--state DEAD] [--since 24h] [--until ISO] [--limit 100]`:
 * run ended runs again after their cause is fixed. DEAD runs (by default; SKIPPED or SUPERSEDED
 * ones on request) get a fresh attempt budget and a new message now:
 * - a run whose last attempt's result is unknown (it ended UNKNOWN or timed out, or its worker
 *   vanished) restarts UNKNOWN: its next claim calls the handler's reconcile first, so an effect
 *   that did land is not applied twice;
 * - every other run restarts READY.
 * Its message is sent now, or, for a run whose fire time is still ahead, delayed to it.
 * Failing runs are acked and recorded DEAD in the ledger, never left in the DLQ, so this (not
 * `redrive`) is how they run again. Each revival is conditional on the status and token read: a run
 * that changed meanwhile is reported, not touched. `--dry-run` lists what would be revived.
 */
import type { Ledger } from '../../shared/store/ledger.js';
import { revivalRefusal, revivalStatus, type LedgerOps } from '../../shared/store/repairs.js';
import type { RunQueue } from '../../shared/messaging/run-queue.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { messageFor } from '../../shared/core/run-message.js';
import { delaySecondsFor } from '../../shared/planner/planner.js';
import { revivalRefusalInLane, revivedInLane } from '../../shared/worker/lanes.js';
import { RunStatus, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { configuredJob, noExtraPositionals, operatorOf, parseCommand, parseInstant, parsePositive, parseRunKey, parseSince, parseStatuses, stringOption } from './args.js';
import { clockOf, EXIT_FAILURE, EXIT_OK, OpsFailure, printJson, printTable, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const retryUsage = 'retry (<job@slotISO[#shard]> | --job NAME [--state DEAD[,SKIPPED,SUPERSEDED]] [--since ISO|24h] [--until ISO] [--limit 100]) [--dry-run] [--by NAME]';

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

export async function retryRuns(deps: RetryDeps, job: Job, runs: readonly Run[], options: { dryRun?: boolean; by?: string; states?: readonly RunStatus[] } = {}): Promise<RetryEntry[]> {
  const states = options.states ?? [RunStatus.DEAD];
  const entries: RetryEntry[] = [];
  for (const run of runs) {
    if (!states.includes(run.status)) {
      entries.push({ runKey: run.runKey, from: run.status, action: 'refused', detail: `${run.status}: only ${states.join(', ')} runs are retried here${run.status === RunStatus.SUCCEEDED ? ' (it succeeded)' : ''}` });
      continue;
    }
    const refusal = revivalRefusal(run) ?? (await revivalRefusalInLane(deps.ledger, job, run, deps.clock()));
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
      entries.push({ runKey: run.runKey, from: run.status, action: 'changed', detail: `changed meanwhile: now ${result.current?.status ?? 'gone'}, token ${result.current?.fencingToken ?? '?'}` });
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
    entries.push({ runKey: run.runKey, from: run.status, to: result.run.status, action: 'revived', detail: details.join('; ') || undefined });
  }
  return entries;
}

export async function retryCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    job: { type: 'string' },
    state: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    by: { type: 'string' },
  });
  noExtraPositionals(positionals, 1);
  const now = clockOf(io)();
  const states = parseStatuses(stringOption(values, 'state')) ?? [RunStatus.DEAD];
  const wrong = states.find((s) => !RETRYABLE_STATES.includes(s));
  if (wrong) throw new UsageError('state', `a retry revives ended runs: one of ${RETRYABLE_STATES.join(', ')}, got "${wrong}"`);
  const by = operatorOf(values, io);
  const single: RunId | undefined = positionals[0] === undefined ? undefined : parseRunKey(positionals[0]);
  const jobName = stringOption(values, 'job');
  if (!single && !jobName) throw new UsageError('runKey', 'give a run key, or --job NAME to retry its DEAD runs');
  if (single && jobName) throw new UsageError('job', 'give a run key or --job, not both');
  const job = configuredJob(io, single?.job ?? jobName);
  const sinceRaw = stringOption(values, 'since');
  const untilRaw = stringOption(values, 'until');
  const limit = parsePositive(stringOption(values, 'limit'), 'limit', 100, { integer: true, max: 10_000 });
  const entries = await withTarget(values, io, async (target) => {
    const deps = { ledger: target.ledger, ops: target.ops, queue: target.queue, clock: clockOf(io) };
    let runs: Run[];
    if (single) {
      const run = await target.ledger.getRun(single);
      if (!run) throw new OpsFailure(`no run ${positionals[0]} in the ledger`);
      runs = [run];
    } else {
      runs = await target.ops.queryRuns(job.name, {
        statuses: states,
        sinceSlot: sinceRaw === undefined ? undefined : parseSince(sinceRaw, now, 'since'),
        untilSlot: untilRaw === undefined ? undefined : parseInstant(untilRaw, 'until'),
        limit,
      });
    }
    return retryRuns(deps, job, runs, { dryRun: values['dry-run'] === true, by, states: single ? RETRYABLE_STATES : states });
  });
  if (values.json) {
    printJson(io, entries);
  } else if (entries.length === 0) {
    io.stdout(`no ${states.join('/')} runs of ${job.name} to retry`);
  } else {
    printTable(io, ['RUN KEY', 'WAS', 'NOW', 'ACTION', 'DETAIL'], entries.map((e) => [e.runKey, e.from, e.to, e.action, e.detail]));
  }
  return single && entries.some((e) => e.action === 'refused' || e.action === 'changed') ? EXIT_FAILURE : EXIT_OK;
}
