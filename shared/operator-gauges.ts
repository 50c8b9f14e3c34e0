/**
 * Gauges of states that wait for a person, published every planner tick so that their alarms stay
 * in ALARM while the state lasts and clear once an operator has acted (a count published when the
 * state begins would clear its alarm a period later, with the state unchanged).
 */
import type { Ledger } from './adapters/ledger.js';
import { MetricName, type MetricsSink, type RunLogger } from './observability.js';
import { PAUSED_BY_FAILURE } from './worker-pause.js';

export interface OperatorGaugeDeps {
  readonly ledger: Pick<Ledger, 'planning'>;
  readonly metrics: MetricsSink;
  readonly logger: RunLogger;
}

/**
 * MetricName.JobsPausedByFailure: of `paused` (the partition's jobs the exception lists show
 * paused, bounded by them), those whose pause record says pauseOnFailure paused them; 0 included,
 * which clears the alarm once `ops resume` ran. A failed read publishes nothing: the alarm keeps
 * its state (missing data is ignored) rather than clearing while a job may still be paused.
 */
export async function publishOperatorGauges(deps: OperatorGaugeDeps, paused: ReadonlySet<string>): Promise<number | undefined> {
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
