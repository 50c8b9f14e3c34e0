/**
 * Handlers for the benchmark's takeover phase, loaded by tools/worker-process.ts (`--handlers`).
 * `bench-hold` holds its first attempt for a long time (until aborted: the worker gets SIGKILLed
 * mid-run, so the lease lapses and a successor takes over); a takeover (attempt > 1) returns at
 * once, so the successor frees its worker for the next kill.
 */
import { sleep } from '../../shared/core/concurrency.js';
import type { JobHandler } from '../../shared/handler-api.js';

export const HOLD_MS = 10 * 60_000;

export const handlers: Readonly<Record<string, JobHandler>> = {
  'bench-hold': {
    async run(ctx) {
      if (ctx.attempt > 1) return { evidence: { tookOverAttempt: ctx.attempt } };
      await sleep(HOLD_MS, ctx.signal);
      return { evidence: { held: HOLD_MS } };
    },
  },
};
