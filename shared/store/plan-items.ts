/** The planner's items as stored (planner-state.ts): what a job's plan item and the tick's first read hold, and their decoding. */
import type { PartitionCursor, PlannerLayout } from '../core/planner-state.js';
import type { PauseRecord } from '../core/pause.js';
import { LedgerKeys } from '../core/resources.js';

export type Item = Record<string, unknown>;

/** A job's own planning state. */
export interface JobPlan {
  readonly job: string;
  /** Recorded until `ops resume` or the next pause, even past its `until` (core/pause.ts says whether it is in force). */
  readonly pause?: PauseRecord;
  /** Catch-up cursor: the last slot planned for the job while it is behind. */
  readonly cursor?: number;
  /** Where its catch-up ends. */
  readonly edge?: number;
  /** `maxRuns` jobs: how many scheduled slots the planner created (each counted with its put). */
  readonly planned?: number;
  /**
   * Written by earlier code instead of a count: the first slot it planned and the last slot the
   * job could have (+∞: none). The planner derives the count from them once (legacyRunCount).
   */
  readonly firstSlot?: number;
  readonly lastSlot?: number;
}

/** What a tick reads first: the layout and the exception lists, in one request. */
export interface TickState {
  readonly layout: PlannerLayout | undefined;
  readonly paused: ReadonlySet<string>;
  /** Jobs listed as catching up (their cursors are on their plan items). */
  readonly behind: ReadonlySet<string>;
}

export function layoutFromItem(item: Item | undefined): PlannerLayout | undefined {
  if (!item || typeof item.of !== 'number') return undefined;
  const raw = (item.partitions as Record<string, PartitionCursor> | undefined) ?? {};
  return { of: item.of, gen: item.gen as number, partitions: new Map(Object.entries(raw).map(([p, c]) => [Number(p), c])) };
}

export function planFromItem(item: Item): JobPlan {
  return {
    job: LedgerKeys.jobOfPk(item.pk as string),
    pause: item.pause as JobPlan['pause'],
    cursor: item.cursor as number | undefined,
    edge: item.edge as number | undefined,
    planned: item.planned as number | undefined,
    firstSlot: item.firstSlot as number | undefined,
    // +∞ (fewer scheduled slots than maxRuns) is stored as its absence of a bound: -1.
    lastSlot: typeof item.lastSlot === 'number' ? (item.lastSlot < 0 ? Number.POSITIVE_INFINITY : item.lastSlot) : undefined,
  };
}

/**
 * The condition clause "no pause holds the job at `now`": none recorded, or its `until` has come
 * (`now` undefined: none recorded). Uses `#until` and `:now`.
 */
export function notPausedAt(now: number | undefined): string {
  return now === undefined ? 'attribute_not_exists(pause)' : '(attribute_not_exists(pause) OR pause.#until <= :now)';
}

export function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
