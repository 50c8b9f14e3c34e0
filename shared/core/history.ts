/**
 * Events the planner and workers report as they go. The local runtime and the tests record them
 * and check the invariants of DESIGN §9 over them; in Lambda nobody listens.
 */
import type { RunStatus } from './vocabulary.js';

export type HistoryEvent =
  | { readonly type: 'run-created'; readonly at: number; readonly runKey: string; readonly job: string; readonly slot: number; readonly shard: number; readonly status: RunStatus }
  | { readonly type: 'message-sent'; readonly at: number; readonly runKey: string; readonly reason: 'planned' | 'swept' }
  | { readonly type: 'claimed'; readonly at: number; readonly runKey: string; readonly owner: string; readonly token: number; readonly attempt: number; readonly from: RunStatus; readonly leaseUntil: number }
  | { readonly type: 'heartbeat'; readonly at: number; readonly runKey: string; readonly owner: string; readonly token: number; readonly ok: boolean; readonly leaseUntil: number }
  | { readonly type: 'handler-started'; readonly at: number; readonly runKey: string; readonly owner: string; readonly token: number; readonly slot: number }
  | { readonly type: 'effect'; readonly at: number; readonly runKey: string; readonly token: number; readonly resource: string; readonly result: 'accepted' | 'fenced-out' | 'condition-failed'; readonly businessKey?: string }
  | { readonly type: 'outcome'; readonly at: number; readonly runKey: string; readonly owner: string; readonly token: number; readonly status: RunStatus; readonly accepted: boolean; readonly nextAttemptAt?: number }
  | { readonly type: 'duplicate'; readonly at: number; readonly runKey: string; readonly messageId: string };

export interface HistorySink {
  record(event: HistoryEvent): void;
}

export const NO_HISTORY: HistorySink = { record: () => undefined };
