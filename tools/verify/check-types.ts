/**
 * What the offline checks read and report: the final state, the expectations and a violation.
 * Apart from checker.ts so that the checks it runs (liveness.ts, model-safety.ts) import them
 * without importing the checker.
 */
import type { RunStatus, Run } from '../../shared/core/vocabulary.js';
import type { Invariant } from './invariant-names.js';

export interface CheckViolation {
  readonly invariant: Invariant;
  /** The run at fault (for a lost slot: the run key the slot should have had). */
  readonly runKey: string;
  readonly detail: string;
}

/** One write as the business item recorded it, in commit order. */
export interface BusinessEffect {
  readonly token: number;
  readonly runKey?: string;
  /** Present on irreversible effects (a charge, an e-mail): each key may land once. */
  readonly businessKey?: string;
  readonly kind?: string;
  /** Identifies one logical write (e.g. one increment): an item applying it twice double-counted. */
  readonly writeId?: string;
}

export interface BusinessState {
  /** `table/pk/sk`, as the worker names resources in `effect` events. */
  readonly resource: string;
  readonly lastFence?: number;
  /** The writes the item accepted, oldest first, when the item keeps such a log. */
  readonly effects?: readonly BusinessEffect[];
  /** A counter the item keeps (one per increment in `effects`), when it keeps one. */
  readonly counter?: number;
}

/** A (job, shard) lane's active-run marker (exclusive overlap policies), as left in the ledger. */
export interface LaneMarker {
  readonly job: string;
  readonly shard: number;
  readonly holderSlot: number;
  /** When the holder took it (its `since`): a run that started before met an older marker. */
  readonly since?: number;
}

/** One planner partition's state, as left in the ledger. */
export interface PlannerState {
  readonly partition: number;
  readonly of: number;
  readonly plannedUntil: number | undefined;
  readonly paused: readonly string[];
  /** Jobs still catching up (or paused) behind the watermark. */
  readonly behind: readonly string[];
}

export interface FinalState {
  readonly runs: readonly Run[];
  readonly business?: readonly BusinessState[];
  readonly markers?: readonly LaneMarker[];
  readonly planner?: readonly PlannerState[];
}

/** A slot the misfire policy keeps, with the statuses it may end in. */
export interface ExpectedSlot {
  readonly job: string;
  readonly slot: number;
  /** @default 0 */
  readonly shard?: number;
  /** Only used to spell the run key of a missing run. @default 1 */
  readonly shards?: number;
  /** @default SUCCEEDED, SKIPPED, SUPERSEDED, DEAD, MANUAL */
  readonly statuses?: readonly RunStatus[];
}

export interface Expected {
  readonly slots?: readonly ExpectedSlot[];
  /** A claim this close to the end of the previous lease is not counted as overlap. @default 0 */
  readonly clockAllowanceMs?: number;
  /** What a model-based scenario knows beyond the history; enables the model safety checks. */
  readonly model?: ModelExpectations;
}

/** A run the model says no actor could have created (a paused job's, a removed job's, …), and why. */
export interface UnexpectedRun {
  readonly runKey: string;
  readonly why: string;
}

export interface ModelExpectations {
  /** Jobs whose handler has a reconcile. */
  readonly reconciling: readonly string[];
  /** Jobs whose handlers write the same business items, by job name (a job alone is its own group). */
  readonly itemGroups: Readonly<Record<string, string>>;
  /** Overlap policy of every job, by name. */
  readonly overlap: Readonly<Record<string, string>>;
  /** Each job's startLead, by name: a run is due (may start, and supersede) that long before its slot. @default 0 */
  readonly startLeadMs?: Readonly<Record<string, number>>;
  /** Tolerance for instants the actors wrote with their own (skewed) clocks, ms. */
  readonly clockToleranceMs: number;
  /** Runs that must not exist, if they do. */
  readonly unexpected?: readonly UnexpectedRun[];
}
