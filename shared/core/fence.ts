/**
 * Fencing tokens comparable across runs of the same job (DESIGN §6).
 *
 * A per-run claim counter alone is not enough: the worker of slot 12:01 may pause, and resume after
 * the worker of slot 12:02 wrote the same cursor. So a token is composed as
 * `slot * CLAIMS_PER_SLOT + claimCount`: every claim of a later slot is larger than every claim of
 * an earlier one, and within one slot each claim (a retry or a takeover) is larger than the last.
 *
 * The composition stays a safe integer until the year 2255 (slot ms ≈ 9e12 × 1000 < 2^53).
 */
export const CLAIMS_PER_SLOT = 1000;

/** The token a run is created with; its first claim gets `initialFence(slot) + 1`. */
export function initialFence(slot: number): number {
  return slot * CLAIMS_PER_SLOT;
}

/** How many claims a token represents; a run refuses further claims once this reaches the cap. */
export function claimsOf(token: number, slot: number): number {
  return token - initialFence(slot);
}

/** Largest claim count a slot can take before its token would collide with the next ms slot. */
export const MAX_CLAIMS_PER_SLOT = CLAIMS_PER_SLOT - 1;

/** The last slot whose tokens stay safe integers through every claim (the year 2255). */
export const MAX_FENCEABLE_SLOT = Math.floor((Number.MAX_SAFE_INTEGER - CLAIMS_PER_SLOT) / CLAIMS_PER_SLOT);

/** The slot a fencing token was handed out for. */
export function slotOfFence(token: number): number {
  return Math.floor(token / CLAIMS_PER_SLOT);
}

/**
 * Why a resource refused a write carrying `mine` after it had seen `seen` (> mine):
 * - `newer-slot`: a run of a later slot (or a later manual run) wrote it. This run's work is
 *   superseded: retrying it can never succeed, and the newer state must not be overwritten;
 * - `newer-claim`: a later claim of this same slot (a takeover) wrote it: this worker lost its lease.
 */
export type FenceRefusal = 'newer-slot' | 'newer-claim';

export function fenceRefusal(mine: number, seen: number): FenceRefusal {
  return slotOfFence(seen) > slotOfFence(mine) ? 'newer-slot' : 'newer-claim';
}
