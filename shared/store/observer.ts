/**
 * What a ledger tells an observer beyond the history events: the local runtime (`npm start`)
 * prints which error an outcome recorded, which runs ended without an attempt and which jobs were
 * paused. Every call follows a write that took effect; the deployed functions set no observer.
 */
import type { Transition } from '../core/outcome.js';
import type { RunStatus, Run } from '../core/vocabulary.js';

/** How a run ended without an attempt: SKIPPED (misfire skip, forbid-skip), SUPERSEDED (coalesce), DEAD (fencing range spent). */
export type SettledStatus = typeof RunStatus.SKIPPED | typeof RunStatus.SUPERSEDED | typeof RunStatus.DEAD;

/** The pause record a pause wrote (`by` is PAUSED_BY_FAILURE for pauseOnFailure's). */
export interface PauseRecord {
  readonly by: string;
  readonly note?: string;
  readonly at: number;
}

export interface LedgerObserver {
  /** The lease holder's outcome was recorded. */
  completed?(run: Run, outcome: Transition): void;
  /** A run was created SKIPPED, or a waiting run was settled without running. */
  settled?(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & Partial<Pick<Run, 'shards'>>,
    status: SettledStatus,
    reason: string | undefined,
  ): void;
  /** A job was paused (by an operator, or by pauseOnFailure through the worker's ledger). */
  paused?(job: string, by: PauseRecord): void;
}
