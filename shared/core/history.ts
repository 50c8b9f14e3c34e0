/**
 * Events the planner and workers report as they go. The local runtime and the tests record them
 * and check the invariants of DESIGN §9 over them; in Lambda nobody listens.
 */
import type { RunStatus } from './vocabulary.js';

export type HistoryEvent =
  | {
      readonly type: 'run-created';
      readonly at: number;
      readonly runKey: string;
      readonly job: string;
      readonly slot: number;
      readonly shard: number;
      readonly status: RunStatus;
    }
  | { readonly type: 'message-sent'; readonly at: number; readonly runKey: string; readonly reason: 'planned' | 'swept' }
  // A planner tick's partition watermark, in two steps of one shape:
  //   partition-planning  the tick put and sent every run it planned up to `plannedUntil` and now
  //                       writes the watermark there. The write may land although the call fails
  //                       (its response lost on every attempt), so a harness takes this as how far
  //                       the watermark may have moved.
  //   partition-planned   the watermark moved: every run it planned was put and sent. The tick may
  //                       still fail after this (its sweep), so a harness cannot read it from the
  //                       tick's report.
  | {
      readonly type: 'partition-planning' | 'partition-planned';
      readonly at: number;
      readonly runKey: '';
      readonly partition: number;
      readonly of: number;
      readonly plannedUntil: number;
    }
  | {
      readonly type: 'claimed';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly attempt: number;
      readonly from: RunStatus;
      readonly leaseUntil: number;
    }
  | {
      readonly type: 'heartbeat';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly ok: boolean;
      readonly leaseUntil: number;
    }
  | {
      readonly type: 'handler-started';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly slot: number;
    }
  | {
      readonly type: 'effect';
      readonly at: number;
      readonly runKey: string;
      readonly token: number;
      readonly resource: string;
      readonly result: 'accepted' | 'fenced-out' | 'condition-failed';
      readonly businessKey?: string;
    }
  | {
      readonly type: 'outcome';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly status: RunStatus;
      readonly accepted: boolean;
      readonly nextAttemptAt?: number;
      /** The recorded error's code (why the run is not SUCCEEDED), and whether its result is unknown. */
      readonly code?: string;
      readonly resultUnknown?: boolean;
    }
  | { readonly type: 'duplicate'; readonly at: number; readonly runKey: string; readonly messageId: string }
  // A message no worker can run (unreadable, an unknown job, a run that does not exist), on each
  // receive until SQS moves it to the DLQ; runKey '' unless it names an existing job's run.
  | {
      readonly type: 'poison';
      readonly at: number;
      readonly runKey: string;
      readonly job?: string;
      readonly messageId: string;
      readonly receiveCount: number;
      readonly code: string;
      readonly reason: string;
    }
  // Reported by handler wrappers (the model tester's handlers), which see what the worker cannot:
  // how the handler itself ended, and that a reconcile ran before it.
  | {
      readonly type: 'handler-finished';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly result: HandlerResult;
    }
  | {
      readonly type: 'reconciled';
      readonly at: number;
      readonly runKey: string;
      readonly owner: string;
      readonly token: number;
      readonly outcome: string;
    }
  // Reported by a test harness: an operator's repair of a run, and an actor the environment stopped
  // (killed, paused, a call delayed) while it held this run's message ('' when it held none).
  | {
      readonly type: 'ops';
      readonly at: number;
      readonly runKey: string;
      readonly action: 'resolve' | 'redrive' | 'retry';
      readonly from: RunStatus;
      readonly to: RunStatus;
    }
  | {
      readonly type: 'actor-disturbed';
      readonly at: number;
      readonly owner: string;
      readonly kind: 'killed' | 'paused' | 'delayed' | 'unanswered';
      readonly runKey: string;
    };

/**
 * How a handler's own code ended: `succeeded` (returned), `retryable`/`permanent` (threw before its
 * irreversible effect: known not done), `unknown` (threw ResultUnknownError, or may have had its
 * effect), `aborted` (stopped by the scheduler, through ctx.signal, a fence or an ended attempt,
 * or by a failed call, after it had tried its effect: it may have landed), `stopped` (the same
 * before it tried its effect: known not done).
 */
export type HandlerResult = 'succeeded' | 'retryable' | 'permanent' | 'unknown' | 'aborted' | 'stopped';

export interface HistorySink {
  record(event: HistoryEvent): void;
}

export const NO_HISTORY: HistorySink = { record: () => undefined };
