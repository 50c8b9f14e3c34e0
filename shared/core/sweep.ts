/**
 * What the sweeper makes of one open run it visits (DESIGN §7, §11), pure. The sweeper is the
 * backstop for every way a run's message can be lost: a planner that crashed between put and
 * send, a refused send, a waiting exclusive run whose lane holder died before dispatching it, an
 * ops repair whose message never left. It must never disturb a run that is in hand.
 */
import { isTerminal, RunStatus, type Run } from './vocabulary.js';

export type SweepVerdict =
  /** Terminal: nothing to do (it only leaves the watch index if it is still there). */
  | 'ended'
  /** Its job is no longer configured: reported, never dispatched (no worker could run it). */
  | 'orphan'
  /** Nobody is on it and its message should have come back long ago: re-dispatch it. */
  | 'lost'
  /** Leased, or waiting for a backoff or a message still due: leave it alone. */
  | 'in-hand';

/** When a waiting run's message was due to be received, at the latest. */
export function dueAt(run: Pick<Run, 'slot' | 'fireAt' | 'nextAttemptAt' | 'createdAt' | 'dispatchedAt'>): number {
  // A catch-up or backfilled run is due when it was created or last sent, not at its old slot.
  return Math.max(run.nextAttemptAt ?? 0, run.fireAt ?? run.slot, run.createdAt, run.dispatchedAt ?? 0);
}

export function sweepVerdict(run: Run, jobConfigured: boolean, now: number, graceMs: number): SweepVerdict {
  if (isTerminal(run.status)) return 'ended';
  if (!jobConfigured) return 'orphan';
  const overdue = now - graceMs;
  if (run.status === RunStatus.RUNNING) return (run.leaseUntil ?? 0) < overdue ? 'lost' : 'in-hand';
  return dueAt(run) < overdue ? 'lost' : 'in-hand';
}

/**
 * Of the lost-looking waiting runs of one exclusive lane whose lane is idle, the one to dispatch:
 * the lane's holder would have dispatched exactly this one (forbid-queue: the oldest; coalesce:
 * the newest, which supersedes the others when it claims; replace: the newest too; forbid-skip: the oldest).
 */
export function laneHead<R extends Pick<Run, 'slot'>>(
  runs: readonly R[],
  overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce' | 'replace',
): R | undefined {
  if (runs.length === 0) return undefined;
  const sorted = [...runs].sort((a, b) => a.slot - b.slot);
  return overlap === 'coalesce' || overlap === 'replace' ? sorted[sorted.length - 1] : sorted[0];
}

/**
 * Of the lost-looking waiting runs of one exclusive lane whose holder is alive, the ones to send
 * anyway: those whose delivery decides them, so that no lost run waits for an idle lane at sweep
 * time, which a lane busy on a fixed beat (a 20-second job swept every minute, on the minute) may
 * never show. The rest wait for the holder's hand-on, and re-sending them would only poll the lane.
 * - forbid-skip: every one (it runs if the lane is free by then, else it is skipped);
 * - replace: those older than the holder (superseded on arrival) and the newest newer one (it
 *   takes the lane over);
 * - coalesce: those older than the holder (superseded on arrival by the newer holder);
 * - forbid-queue: none: the holder's look reads the lane from its floor, which the sweeper has
 *   lowered to every lost run, and hands the lane to the oldest.
 */
export function sendBehindLiveHolder<R extends Pick<Run, 'slot'>>(
  runs: readonly R[],
  overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce' | 'replace',
  holder: { readonly slot: number },
): R[] {
  const sorted = [...runs].sort((a, b) => a.slot - b.slot);
  const older = sorted.filter((r) => r.slot < holder.slot);
  const newer = sorted.filter((r) => r.slot > holder.slot);
  switch (overlap) {
    case 'forbid-skip':
      return sorted;
    case 'replace':
      return newer.length > 0 ? [...older, newer[newer.length - 1]!] : older;
    case 'coalesce':
      return older;
    case 'forbid-queue':
      return [];
  }
}
