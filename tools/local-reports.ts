/**
 * What the local runtime reports (tools/local-runtime.ts), one shape per kind of line `npm start`
 * prints (tools/local-lines.ts), and its summary figures.
 */
import type { SettledStatus } from '../shared/store/observer.js';

export interface RunOutcomeLine {
  readonly job: string;
  readonly slot: number;
  readonly runKey: string;
  readonly attempt: number;
  readonly token: number;
  readonly status: string;
  readonly durationMs: number;
  /** The error the attempt recorded (RETRY, UNKNOWN, DEAD, SUPERSEDED). */
  readonly error?: { readonly code: string; readonly message: string };
}

/** A run ended without an attempt: SKIPPED (misfire skip, forbid-skip), SUPERSEDED (coalesce), DEAD (fencing range spent). */
export interface RunSettledLine {
  readonly job: string;
  readonly slot: number;
  readonly runKey: string;
  readonly status: SettledStatus;
  readonly reason?: string;
}

/** A message no worker can run, the first time a worker received it; SQS moves it to the DLQ after RUN_QUEUES.maxReceiveCount receives. */
export interface PoisonLine {
  readonly messageId: string;
  /** The job its body names, when it names one. */
  readonly job?: string;
  readonly runKey: string;
  readonly code: string;
  readonly reason: string;
}

/** A message SQS moved to the dead-letter queue; the job and run its body names, when it is readable. */
export interface DeadLetterLine {
  readonly messageId: string;
  readonly job?: string;
  readonly runKey?: string;
}

/** A job pauseOnFailure paused: it waits for `ops resume`. */
export interface PausedLine {
  readonly job: string;
  readonly note?: string;
}

/** A fenced write refused: the item had seen a higher fence (a newer slot, or a takeover of this one). */
export interface FencedOutLine {
  readonly runKey: string;
  readonly token: number;
  readonly resource: string;
}

/** A claim that took a run over from a worker whose lease expired. */
export interface TakeoverLine {
  readonly runKey: string;
  readonly token: number;
  readonly owner: string;
  /** Who held the lease before, if this runtime saw that claim. */
  readonly previousOwner?: string;
}

/** `npm start`'s summary figures (also its last line with --duration). */
export interface RuntimeSummary {
  readonly uptimeSeconds: number;
  readonly ticks: number;
  readonly runsSucceeded: number;
  readonly runsFailed: number;
  readonly runsSkipped: number;
  readonly runsSuperseded: number;
  readonly duplicatesAcked: number;
  readonly takeovers: number;
  readonly fencingRejections: number;
  readonly fencedOutWrites: number;
  /** Distinct messages a worker found it cannot run (left for the DLQ). */
  readonly poisonMessages: number;
  /** Messages SQS moved to the dead-letter queue (poison, or a run that kept failing its receives). */
  readonly deadLettered: number;
  /** Jobs pauseOnFailure paused while this runtime ran. */
  readonly jobsPausedByFailure: number;
  readonly outboxEvents: number;
  /** First attempts of on-time (planned) slots only: handler start − fire time (MetricName.TriggerLag). */
  readonly triggerLagSamples: number;
  readonly triggerLagP50Ms: number;
  readonly triggerLagP99Ms: number;
  /** First attempts of catch-up, backfilled and manual runs (MetricName.LateStartLag): late by construction. */
  readonly lateStarts: number;
  readonly lateStartLagP99Ms: number;
  readonly violations: number;
}
