/**
 * The ledger adapter (DESIGN §5, §6): one object over the ledger table that the planner, workers,
 * sweeper and tools are handed. It composes the run adapters, each one concept:
 *
 *   runs.ts          creating runs (the conditional put, the counted put, trigger keys)
 *   run-holds.ts     the lease holder's writes (claim, heartbeat, checkpoint, outcome, give back)
 *   run-endings.ts   ending a run other than by its outcome (settle, replace, spent fence range)
 *   fenced-out-notes.ts  a former holder's note of its fenced-out writes on its own claim's entry
 *   watch-index.ts   the sweeper's watch index
 *   run-queries.ts   reads of runs
 *
 * and the planner's own items and the exclusive lanes' markers (`planning`, `lanes`), on the same
 * table and client. The adapters marshal, name each condition clause, and send every conditional
 * write through one envelope (conditional.ts) that hands back the item a failed check found, never
 * an extra read; the rules themselves live in shared/core.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ClaimResult } from '../core/lease.js';
import type { Run, RunId } from '../core/vocabulary.js';
import { FencedOutNotes, type FencedOutAttempt, type FencedOutNote, type NoteResult } from './fenced-out-notes.js';
import { LaneStore } from './lanes.js';
import type { SettledStatus } from './observer.js';
import { PlannerStore } from './planner-state.js';
import { RunEndings } from './run-endings.js';
import { RunHolds } from './run-holds.js';
import {
  RunTable,
  type AttemptFacts,
  type CountedCreateResult,
  type CreateRunResult,
  type LeaseCheck,
  type LedgerOptions,
  type NewRun,
  type Outcome,
  type RunCount,
  type TriggerKey,
} from './run-items.js';
import { RunQueries } from './run-queries.js';
import { RunCreation } from './runs.js';
import { WatchIndex, type WatchCursor } from './watch-index.js';

// What callers of the ledger take from run items through it; the rest they import from run-items.ts.
export { deadKeys, idOfKey, runFromItem, watchKeys, type CountedCreateResult, type NewRun } from './run-items.js';

export class Ledger extends RunTable {
  /** The planner's layout, watermarks, job planning state and exception lists. */
  readonly planning: PlannerStore;
  /** The exclusive lanes' active-run markers. */
  readonly lanes: LaneStore;
  readonly creation: RunCreation;
  readonly holds: RunHolds;
  readonly endings: RunEndings;
  readonly notes: FencedOutNotes;
  readonly watching: WatchIndex;
  readonly queries: RunQueries;

  constructor(doc: DynamoDBDocumentClient, options: LedgerOptions) {
    super(doc, options);
    this.planning = new PlannerStore(doc, this.tableName, options.observer);
    this.lanes = new LaneStore(doc, this.tableName);
    this.creation = new RunCreation(doc, options, this.lanes);
    this.holds = new RunHolds(doc, options);
    this.endings = new RunEndings(doc, options);
    this.notes = new FencedOutNotes(doc, options);
    this.watching = new WatchIndex(doc, options);
    this.queries = new RunQueries(doc, options, this.watching);
  }

  // ---------------------------------------------------------------- create (runs.ts)

  createRun(run: NewRun, now: number, creator?: string): Promise<CreateRunResult> {
    return this.creation.createRun(run, now, creator);
  }

  createCountedRun(run: NewRun, now: number, creator: string, count: RunCount): Promise<CountedCreateResult> {
    return this.creation.createCountedRun(run, now, creator, count);
  }

  reserveTriggerKey(job: string, key: string, want: { readonly slot: number; readonly shard?: number }, now: number): Promise<TriggerKey> {
    return this.creation.reserveTriggerKey(job, key, want, now);
  }

  moveTriggerKey(job: string, key: string, from: number, to: number): Promise<number> {
    return this.creation.moveTriggerKey(job, key, from, to);
  }

  // ---------------------------------------------------------------- claim and hold (run-holds.ts)

  claim(id: RunId, owner: string, now: number, leaseMs: number, skewMs: number): Promise<ClaimResult> {
    return this.holds.claim(id, owner, now, leaseMs, skewMs);
  }

  heartbeat(run: Run, leaseUntil: number): Promise<LeaseCheck> {
    return this.holds.heartbeat(run, leaseUntil);
  }

  checkpoint(run: Run, cursor: unknown): Promise<LeaseCheck> {
    return this.holds.checkpoint(run, cursor);
  }

  complete(run: Run, outcome: Outcome, now: number, facts?: AttemptFacts, writeId?: string): Promise<LeaseCheck> {
    return this.holds.complete(run, outcome, now, facts, writeId);
  }

  giveBack(run: Run): Promise<boolean> {
    return this.holds.giveBack(run);
  }

  /** A former holder's note of its attempt's fenced-out writes, once a newer token holds the run (fenced-out-notes.ts). */
  noteFencedOut(attempt: FencedOutAttempt, note: FencedOutNote, now: number, writeId?: string): Promise<NoteResult> {
    return this.notes.note(attempt, note, now, writeId);
  }

  // ---------------------------------------------------------------- other endings (run-endings.ts)

  endSpentRunning(run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken'>, now: number, expiredBefore: number): Promise<boolean> {
    return this.endings.endSpentRunning(run, now, expiredBefore);
  }

  settleWaiting(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & { readonly fencingToken?: number },
    status: SettledStatus,
    reason: string,
    now: number,
  ): Promise<boolean> {
    return this.endings.settleWaiting(run, status, reason, now);
  }

  replaceRunning(run: Run, by: string, now: number): Promise<boolean> {
    return this.endings.replaceRunning(run, by, now);
  }

  // ---------------------------------------------------------------- watching (watch-index.ts)

  watch(id: RunId): Promise<boolean> {
    return this.watching.watch(id);
  }

  markRedispatch(run: Run, now: number, graceMs: number, maxRedispatches: number): Promise<'marked' | 'moved' | 'exhausted'> {
    return this.watching.markRedispatch(run, now, graceMs, maxRedispatches);
  }

  unwatch(id: RunId): Promise<void> {
    return this.watching.unwatch(id);
  }

  watchedPage(bucket: number, slotUpTo: number, after: WatchCursor | undefined, limit: number): ReturnType<WatchIndex['watchedPage']> {
    return this.watching.watchedPage(bucket, slotUpTo, after, limit);
  }

  countOpenDead(bucket: number, cap: number): Promise<number> {
    return this.watching.countOpenDead(bucket, cap);
  }

  // ---------------------------------------------------------------- queries (run-queries.ts)

  getRun(id: RunId, consistent = true): Promise<Run | undefined> {
    return this.queries.getRun(id, consistent);
  }

  getRuns(ids: readonly RunId[]): Promise<Run[]> {
    return this.queries.getRuns(ids);
  }

  // The reads with long parameter lists take them as run-queries.ts declares them, not a copy.

  nearestRuns(...args: Parameters<RunQueries['nearestRuns']>): ReturnType<RunQueries['nearestRuns']> {
    return this.queries.nearestRuns(...args);
  }

  laneRunsAfter(...args: Parameters<RunQueries['laneRunsAfter']>): ReturnType<RunQueries['laneRunsAfter']> {
    return this.queries.laneRunsAfter(...args);
  }

  laneFromFloor(...args: Parameters<RunQueries['laneFromFloor']>): ReturnType<RunQueries['laneFromFloor']> {
    return this.queries.laneFromFloor(...args);
  }

  openRunsInWindow(job: string, after: number, until: number): Promise<Run[]> {
    return this.queries.openRunsInWindow(job, after, until);
  }

  listRuns(job: string, options?: { limit?: number; ascending?: boolean; sinceSlot?: number }): Promise<Run[]> {
    return this.queries.listRuns(job, options);
  }

  listOpenRuns(slotBefore: number, limit: number): Promise<Run[]> {
    return this.queries.listOpenRuns(slotBefore, limit);
  }
}
