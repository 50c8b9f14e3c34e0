/**
 * Logging and metrics seams. The planner and worker depend on these small interfaces; Lambda
 * wires Powertools Logger and Metrics (EMF) into them, the local runtime and tests wire
 * in-memory versions.
 */
import type { RunLogger } from '../handler-api.js';

export type { RunLogger };

/** A logger that stamps keys on every line of a scope (a run, a record). */
export interface ChildLogger extends RunLogger {
  child(keys: Record<string, unknown>): ChildLogger;
}

export type MetricUnit = 'Count' | 'Milliseconds' | 'Seconds';

/** Metric names of DESIGN §10, in one place so dashboards and code agree. */
export const MetricName = {
  SlotsMaterialized: 'SlotsMaterialized',
  SlotsSkipped: 'SlotsSkipped',
  SlotsMisfired: 'SlotsMisfired',
  RunsSwept: 'RunsSwept',
  PlannerLag: 'PlannerLag',
  TriggerLag: 'TriggerLag',
  ClaimConflicts: 'ClaimConflicts',
  DuplicateDeliveries: 'DuplicateDeliveries',
  Takeovers: 'Takeovers',
  FencingRejections: 'FencingRejections',
  LeaseLost: 'LeaseLost',
  HeartbeatLatency: 'HeartbeatLatency',
  RunDuration: 'RunDuration',
  RunsSucceeded: 'RunsSucceeded',
  RunsRetried: 'RunsRetried',
  RunsUnknown: 'RunsUnknown',
  RunsDead: 'RunsDead',
  RunsYielded: 'RunsYielded',
  PoisonMessages: 'PoisonMessages',
  /** A record whose processing threw (ledger unreachable, throttled past the SDK's retries, a bug): reported failed, retried by SQS. */
  WorkerRecordErrors: 'WorkerRecordErrors',
  OverlapWaits: 'OverlapWaits',
  RunsSuperseded: 'RunsSuperseded',
  RunsSkippedByOverlap: 'RunsSkippedByOverlap',
  OldestOpenRunAge: 'OldestOpenRunAge',
  /** Open runs of jobs no longer in the config, seen by the sweeper (they need `ops resolve`). */
  OrphanedOpenRuns: 'OrphanedOpenRuns',
  /** Runs the sweeper re-dispatched maxRedispatches times without a claim: left for an operator. */
  RunsStuck: 'RunsStuck',
  /** Overlap `replace`: a newer run ended a running (or waiting) older one through the fence. */
  RunsReplaced: 'RunsReplaced',
  /** A job paused itself after pauseOnFailure consecutive DEAD runs (alarmed). */
  JobsPausedOnFailure: 'JobsPausedOnFailure',
  /**
   * Gauge, every planner tick per partition: the partition's jobs that are paused by
   * pauseOnFailure (the pause record says by: pauseOnFailure) and wait for `ops resume`.
   */
  JobsPausedByFailure: 'JobsPausedByFailure',
  /**
   * Gauge, every planner tick per partition: DEAD runs nobody has retried or resolved yet (they
   * sit under the DEAD keys of the partition's watch buckets until then, or until their TTL).
   */
  OpenDeadRuns: 'OpenDeadRuns',
  /** A newer slot's fence refused a run's write: the run ended SUPERSEDED. */
  RunsSupersededByFence: 'RunsSupersededByFence',
  /** Catch-up runs a tick left for later ticks (its catch-up budget was spent). */
  CatchUpDeferred: 'CatchUpDeferred',
  /**
   * Handler start − fire time of a catch-up, backfilled or manual run (origin not planned), or of
   * a revived run that had never been claimed (a retried SKIPPED slot), on the run's first claim
   * only (claim 1 by its fencing token) and only when that claim took it from READY. Retries,
   * takeovers and the claims of a revived run that had been claimed before are not measured; an
   * unrevived planned run's first claim is TriggerLag.
   */
  LateStartLag: 'LateStartLag',
  /**
   * A planner tick that completed, published by the planner Lambda with dimension partition (one
   * series per partition, not in the per-stack totals): the planner-silent alarms watch each.
   */
  PlannerTicks: 'PlannerTicks',
  /** An outcome write that failed and was retried while the lease held. */
  OutcomeWriteRetries: 'OutcomeWriteRetries',
} as const;

export interface MetricsSink {
  count(name: string, value?: number): void;
  observe(name: string, value: number, unit: MetricUnit): void;
}

/** Counts and observations kept in memory: the local runtime's summary and the tests read them. */
export class InMemoryMetrics implements MetricsSink {
  readonly counters = new Map<string, number>();
  readonly observations = new Map<string, number[]>();

  count(name: string, value = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
  }

  observe(name: string, value: number): void {
    const list = this.observations.get(name) ?? [];
    list.push(value);
    this.observations.set(name, list);
  }

  get(name: string): number {
    return this.counters.get(name) ?? 0;
  }
}

/** A logger that writes one JSON object per line (the local runtime's and tests' stand-in for Powertools). */
export class JsonLineLogger implements RunLogger {
  constructor(
    private readonly write: (line: string) => void,
    private readonly keys: Record<string, unknown> = {},
    private readonly minLevel: 'debug' | 'info' | 'warn' | 'error' = 'info',
  ) {}

  child(keys: Record<string, unknown>): JsonLineLogger {
    return new JsonLineLogger(this.write, { ...this.keys, ...keys }, this.minLevel);
  }

  private log(level: 'debug' | 'info' | 'warn' | 'error', message: string, extra: Record<string, unknown>[]): void {
    const order = ['debug', 'info', 'warn', 'error'];
    if (order.indexOf(level) < order.indexOf(this.minLevel)) return;
    this.write(JSON.stringify(Object.assign({ level, message, timestamp: new Date().toISOString() }, this.keys, ...extra)));
  }

  debug(message: string, ...extra: Record<string, unknown>[]): void {
    this.log('debug', message, extra);
  }
  info(message: string, ...extra: Record<string, unknown>[]): void {
    this.log('info', message, extra);
  }
  warn(message: string, ...extra: Record<string, unknown>[]): void {
    this.log('warn', message, extra);
  }
  error(message: string, ...extra: Record<string, unknown>[]): void {
    this.log('error', message, extra);
  }
}
