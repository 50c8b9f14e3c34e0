/**
 * Lease rules (DESIGN §6), pure. The ledger adapter asks these functions what a refused claim
 * means, given the item DynamoDB returned with the ConditionalCheckFailedException.
 */
import { CLAIMABLE_STATUSES, isTerminal, RunStatus, type Run } from './vocabulary.js';
import { claimsOf, MAX_CLAIMS_PER_SLOT } from './fence.js';

/**
 * Clocks differ between workers. A lease counts as expired only once `leaseUntil` is this far in
 * the past, so a slightly fast clock cannot steal a live lease. Clocks only decide how soon a
 * takeover happens; correctness rests on the fencing token.
 */
export const DEFAULT_CLOCK_SKEW_MS = 2_000;

/** SQS visibility timeouts are whole seconds: the finest a message can be hidden. */
export const VISIBILITY_STEP_MS = 1_000;

/**
 * How long (whole seconds) a holder hides its run's message so that, should the holder die, the
 * message comes back for a successor as soon as it can usefully take over: never before the lease
 * ends (a live holder is never disturbed), and within one step before the lease plus the clock
 * allowance has passed, so the successor waits out the sub-second rest in process (see the
 * worker's claimRun) rather than hiding the message again. Rounding lease + allowance up instead
 * would put every takeover up to a second late; hiding again would spend a second receive of the
 * message's maxReceiveCount on every takeover.
 */
export function takeoverVisibilitySeconds(leaseUntil: number, skewMs: number, now: number): number {
  const leaseEnd = Math.ceil((leaseUntil - now) / VISIBILITY_STEP_MS);
  const claimable = Math.floor((leaseUntil + skewMs - now) / VISIBILITY_STEP_MS);
  return Math.max(0, leaseEnd, claimable);
}

export type ClaimRefusal =
  | { readonly kind: 'missing' }
  | { readonly kind: 'terminal'; readonly run: Run }
  /** Another owner holds a live lease: hide the message until it could expire. */
  | { readonly kind: 'leased'; readonly run: Run; readonly retryAt: number }
  /** A RETRY whose backoff has not elapsed: hide the message until then. */
  | { readonly kind: 'not-due'; readonly run: Run; readonly retryAt: number }
  /** Another run of the job holds its active-run marker (overlap policy). */
  | { readonly kind: 'blocked'; readonly holderSlot: number }
  /** The run used up every claim its fencing range allows. */
  | { readonly kind: 'exhausted'; readonly run: Run };

export type ClaimResult = { readonly kind: 'claimed'; readonly run: Run; readonly claimedFrom: RunStatus } | ClaimRefusal;

/** Why a conditional claim failed, from the item as it was at the failed check. */
export function explainClaimRefusal(run: Run | undefined, now: number, skewMs: number): ClaimRefusal {
  if (!run) return { kind: 'missing' };
  if (isTerminal(run.status)) return { kind: 'terminal', run };
  // A live holder of the last claim finishes the run itself; only a dead one leaves it to us.
  const liveHolder = run.status === RunStatus.RUNNING && (run.leaseUntil ?? 0) + skewMs > now;
  if (!liveHolder && claimsOf(run.fencingToken, run.slot) >= MAX_CLAIMS_PER_SLOT) return { kind: 'exhausted', run };
  if (run.status === RunStatus.RUNNING) {
    return { kind: 'leased', run, retryAt: (run.leaseUntil ?? now) + skewMs };
  }
  if (CLAIMABLE_STATUSES.includes(run.status) && run.nextAttemptAt !== undefined && run.nextAttemptAt > now) {
    return { kind: 'not-due', run, retryAt: run.nextAttemptAt };
  }
  // The item changed between the failed check and now (a race we lost); let the message come back soon.
  return { kind: 'leased', run, retryAt: now + 1_000 };
}
