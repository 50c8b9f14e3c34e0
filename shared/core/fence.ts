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
