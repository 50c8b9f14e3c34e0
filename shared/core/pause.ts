/**
 * A job's pause, as its plan item records it (who, when, why) and when it ends by itself. A pause
 * with an `until` is in force before that instant and not from it on: the planner plans the job
 * again and a new pause may replace it, with nothing written at expiry. Every reader applies this
 * one rule to the record it read, so the planner, the worker's pauseOnFailure, `ops jobs` and the
 * console agree on whether the job is paused at a given now.
 */

/** The `by` of a pause that pauseOnFailure made (the gauge of jobs paused by failure counts these). */
export const PAUSED_BY_FAILURE = 'pauseOnFailure';

export interface PauseRecord {
  /** When it was paused (UTC ms). */
  readonly at: number;
  readonly by: string;
  readonly note?: string;
  /** When it ends by itself (UTC ms); absent: it lasts until `ops resume`. */
  readonly until?: number;
}

/** Whether `pause` holds the job at `now`: it exists and its `until`, if any, has not come. */
export function pauseInForce(pause: PauseRecord | undefined, now: number): pause is PauseRecord {
  return pause !== undefined && (pause.until === undefined || now < pause.until);
}

/** The pause in force at `now`, or undefined (none, or one that expired). */
export function pauseAt<P extends PauseRecord>(pause: P | undefined, now: number): P | undefined {
  return pauseInForce(pause, now) ? pause : undefined;
}
