/**
 * Gauges of states that wait for a person, published every planner tick so that their alarms stay
 * in ALARM while the state lasts and clear once an operator has acted (a count published when the
 * state begins would clear its alarm a period later, with the state unchanged).
 */
import type { Ledger } from '../store/ledger.js';
import { mapBounded } from '../core/concurrency.js';
import { ownedOpenBuckets } from '../core/planner-state.js';
import { MetricName, type MetricsSink, type RunLogger } from '../runtime/observability.js';
import { PAUSED_BY_FAILURE } from '../core/pause.js';

/** Most DEAD entries counted per bucket and tick: the alarm only needs "more than 0". */
export const OPEN_DEAD_COUNT_CAP = 1_000;

export interface OperatorGaugeDeps {
  readonly ledger: Pick<Ledger, 'planning' | 'countOpenDead'>;
  readonly metrics: MetricsSink;
  readonly logger: RunLogger;
}

export interface OperatorGauges {
  /** MetricName.JobsPausedByFailure; undefined when its read failed (nothing published). */
  readonly pausedByFailure?: number;
  /** MetricName.OpenDeadRuns; undefined when its read failed (nothing published). */
  readonly openDead?: number;
}

/** Both gauges of the partition's tick; a read that fails leaves its gauge unpublished. */
export async function publishOperatorGauges(
  deps: OperatorGaugeDeps,
  input: { readonly paused: ReadonlySet<string>; readonly partition: number; readonly of: number },
): Promise<OperatorGauges> {
  const [pausedByFailure, openDead] = await Promise.all([
    publishPausedByFailure(deps, input.paused),
    publishOpenDead(deps, input.partition, input.of),
  ]);
  return { pausedByFailure, openDead };
}

/**
 * MetricName.OpenDeadRuns: DEAD runs under the DEAD keys of the partition's watch buckets (the
 * runs nobody has retried or resolved yet, until their TTL), each bucket counted up to
 * OPEN_DEAD_COUNT_CAP; 0 included, which clears runs-dead once every DEAD run was acted on.
 */
async function publishOpenDead(deps: OperatorGaugeDeps, partition: number, of: number): Promise<number | undefined> {
  try {
    const counts = await mapBounded(ownedOpenBuckets(partition, of), 16, (bucket) =>
      deps.ledger.countOpenDead(bucket, OPEN_DEAD_COUNT_CAP),
    );
    const openDead = counts.reduce((a, b) => a + b, 0);
    deps.metrics.observe(MetricName.OpenDeadRuns, openDead, 'Count');
    return openDead;
  } catch (error) {
    deps.logger.warn('could not count the DEAD runs waiting for an operator: the gauge is not published this tick', {
      error: String(error),
    });
    return undefined;
  }
}

/**
 * MetricName.JobsPausedByFailure: of `paused` (the partition's jobs the exception lists show
 * paused, bounded by them), those whose pause record says pauseOnFailure paused them; 0 included,
 * which clears the alarm once `ops resume` ran. A failed read publishes nothing: the alarm keeps
 * its state (missing data is ignored) rather than clearing while a job may still be paused.
 */
async function publishPausedByFailure(deps: OperatorGaugeDeps, paused: ReadonlySet<string>): Promise<number | undefined> {
  try {
    const plans = paused.size > 0 ? await deps.ledger.planning.readJobPlans([...paused]) : new Map();
    const byFailure = [...plans.values()].filter((plan) => plan.pause?.by === PAUSED_BY_FAILURE).length;
    // observe, not count: a gauge's zero must be published (count drops zeros).
    deps.metrics.observe(MetricName.JobsPausedByFailure, byFailure, 'Count');
    return byFailure;
  } catch (error) {
    deps.logger.warn('could not count the jobs paused by failure: the gauge is not published this tick', { error: String(error) });
    return undefined;
  }
}
