/**
 * The plug-in point for `ops retry` (a fresh attempt budget for a DEAD run). The ops library
 * does not have it yet; when `tools/ops/retry.ts` exists and exports `retryRun`, the model
 * drives it through this adapter, so the generator's Retry command starts exercising it without
 * any other change. Until then a Retry command does nothing (and says so in the story).
 */
import type { Ledger } from '../../shared/adapters/ledger.js';
import type { LedgerOps } from '../../shared/adapters/ledger-ops.js';
import type { RunQueue } from '../../shared/adapters/run-queue.js';
import type { Job } from '../../shared/core/job-schema.js';
import type { RunId, RunStatus } from '../../shared/core/vocabulary.js';

export interface RetryDeps {
  readonly ledger: Ledger;
  readonly ops: LedgerOps;
  readonly queue: RunQueue;
  readonly clock: () => number;
  readonly jobs: readonly Job[];
}

type RetryFn = (deps: RetryDeps, request: { readonly id: RunId; readonly by: string }) => Promise<{ readonly after?: { readonly status: RunStatus } }>;

let loaded: Promise<RetryFn | undefined> | undefined;

function load(): Promise<RetryFn | undefined> {
  // A computed specifier: the module may not exist in this build, and that is not an error.
  const specifier = ['..', 'ops', 'retry.js'].join('/');
  loaded ??= import(new URL(specifier, import.meta.url).href).then(
    (module: Record<string, unknown>) => (typeof module.retryRun === 'function' ? (module.retryRun as RetryFn) : undefined),
    () => undefined,
  );
  return loaded;
}

/** Retries a DEAD run through `ops retry`; undefined when this build has no `ops retry`. */
export async function opsRetry(deps: RetryDeps, id: RunId): Promise<RunStatus | undefined> {
  const retry = await load();
  if (!retry) return undefined;
  const result = await retry(deps, { id, by: 'model' });
  return result.after?.status;
}
