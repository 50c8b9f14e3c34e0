/**
 * The ledger the local runtime hands its planner and workers (tools/local-runtime.ts): the real
 * adapter, reporting to `npm start` what the history events do not carry.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Ledger, type AttemptFacts, type CountedCreateResult, type CreateRunResult, type LeaseCheck, type LedgerOptions, type NewRun, type Outcome, type RunCount } from '../shared/store/ledger.js';
import { PlannerStore } from '../shared/store/planner-state.js';
import { RunStatus, type Run } from '../shared/core/vocabulary.js';

/** How a run ended without an attempt: SKIPPED (misfire skip, forbid-skip), SUPERSEDED (coalesce), DEAD (fencing range spent). */
export type SettledStatus = typeof RunStatus.SKIPPED | typeof RunStatus.SUPERSEDED | typeof RunStatus.DEAD;

/** The pause record a pause wrote (`by` is PAUSED_BY_FAILURE for pauseOnFailure's). */
export type PauseRecord = Parameters<PlannerStore['pause']>[2];

/**
 * What the local runtime's ledger reports beyond the history events: errors recorded, runs ended
 * without an attempt, jobs paused (pauseOnFailure pauses through the worker's ledger).
 */
export interface LedgerObserver {
  completed(run: Run, outcome: Outcome): void;
  settled(run: Pick<Run, 'job' | 'slot' | 'shard'> & Partial<Pick<Run, 'shards'>>, status: SettledStatus, reason: string | undefined): void;
  paused?(job: string, by: PauseRecord): void;
}

/** The planner store, telling the observer of each pause it made. */
class ObservedPlannerStore extends PlannerStore {
  constructor(
    doc: DynamoDBDocumentClient,
    tableName: string,
    private readonly observer: LedgerObserver,
  ) {
    super(doc, tableName);
  }

  override async pause(job: string, plannedUntil: number, by: PauseRecord): Promise<boolean> {
    const paused = await super.pause(job, plannedUntil, by);
    if (paused) this.observer.paused?.(job, by);
    return paused;
  }
}

/**
 * The ledger the local runtime hands the planner and workers: the real adapter, telling `npm start`
 * what an outcome's error was and which runs ended without an attempt (SKIPPED, SUPERSEDED, DEAD),
 * which the history events do not carry, and which jobs were paused.
 */
export class ObservedLedger extends Ledger {
  override readonly planning: PlannerStore;

  constructor(
    doc: DynamoDBDocumentClient,
    options: LedgerOptions,
    private readonly observer: LedgerObserver,
  ) {
    super(doc, options);
    this.planning = new ObservedPlannerStore(doc, this.tableName, observer);
  }

  override async createRun(run: NewRun, now: number, creator?: string): Promise<CreateRunResult> {
    const result = await super.createRun(run, now, creator);
    if (result.created && run.status === RunStatus.SKIPPED) this.observer.settled(run, RunStatus.SKIPPED, run.reason);
    return result;
  }

  override async createCountedRun(run: NewRun, now: number, creator: string, count: RunCount): Promise<CountedCreateResult> {
    const result = await super.createCountedRun(run, now, creator, count);
    if (result.created && run.status === RunStatus.SKIPPED) this.observer.settled(run, RunStatus.SKIPPED, run.reason);
    return result;
  }

  override async complete(run: Run, outcome: Outcome, now: number, facts?: AttemptFacts, writeId?: string): Promise<LeaseCheck> {
    const check = await super.complete(run, outcome, now, facts, writeId);
    if (check.ok) this.observer.completed(run, outcome);
    return check;
  }

  override async settleWaiting(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & { readonly fencingToken?: number },
    status: SettledStatus,
    reason: string,
    now: number,
  ): Promise<boolean> {
    const settled = await super.settleWaiting(run, status, reason, now);
    if (settled) this.observer.settled(run, status, reason);
    return settled;
  }
}
