/**
 * The names of the invariants the checker judges (checker.ts), the model's safety checks
 * (model-safety.ts) and the liveness checks (liveness.ts). Their own module, so the checks can
 * import the names as values without an import cycle through checker.ts.
 */
export const Invariant = {
  ONE_RUN_PER_SLOT: 'one-run-per-slot',
  ONE_LIVE_LEASE: 'one-live-lease',
  FENCE_MONOTONIC: 'fence-monotonic',
  ONE_IRREVERSIBLE_EFFECT: 'one-irreversible-effect',
  NO_LOST_SLOT: 'no-lost-slot',
  // Model-based safety (checked when `expected.model` is given; see checkModelSafety).
  NO_RERUN_AFTER_SUCCESS: 'no-rerun-after-success',
  RECONCILE_BEFORE_RERUN: 'reconcile-before-rerun',
  NO_LATE_FENCED_WRITE: 'no-late-fenced-write',
  NO_DOUBLE_APPLY: 'no-double-apply',
  OWN_WRITE_RECOGNISED: 'own-write-recognised',
  FENCED_OUT_SUPERSEDED: 'fenced-out-superseded',
  SUPERSEDED_BY_DUE: 'superseded-by-due',
  NO_UNEXPECTED_RUN: 'no-unexpected-run',
  // The model's checks of config changes, long runs and operator-created runs (tools/model/report-checks.ts).
  MAX_RUNS_EXACT: 'max-runs-exact',
  YIELD_NEVER_DLQ: 'yield-never-dlq',
  CREATED_RUNS_RUN: 'created-runs-run',
  RUN_MESSAGE_ACCEPTED: 'run-message-accepted',
  REPORT_KEPT: 'report-kept',
  // Liveness at quiescence (tools/verify/liveness.ts).
  LANE_NOT_BLOCKED: 'lane-not-blocked',
  WATERMARK_CAUGHT_UP: 'watermark-caught-up',
  NO_EXPIRED_RUNNING: 'no-expired-running',
  NO_LOOPING_MESSAGE: 'no-looping-message',
  OPEN_RUN_SWEPT: 'open-run-swept',
  PAUSE_KEPT: 'pause-kept',
} as const;
export type Invariant = (typeof Invariant)[keyof typeof Invariant];
