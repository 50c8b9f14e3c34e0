/** Powertools Logger and Metrics (EMF) behind the planner's and worker's small seams. */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ChildLogger } from './observability.js';
import { MetricName, type MetricsSink, type MetricUnit as Unit } from './observability.js';
import { ENV } from '../core/resources.js';

export const SERVICE_NAME = 'scheduler';
export const METRICS_NAMESPACE = 'FencedScheduler';
/**
 * Dimension that scopes every metric to its stack: stacks in one account and region share the
 * namespace, and an alarm or dashboard of one must not see another's runs. The stack sets
 * ENV.metricsStack on its functions; without it (local runtime, tests) the dimension is absent.
 */
export const STACK_DIMENSION = 'stack';
/** Dimension of MetricName.PlannerTicks: the planner partition whose tick completed. */
export const PARTITION_DIMENSION = 'partition';

/** The dimensions every scheduler metric of a stack carries (what its alarms and dashboard select). */
export function schedulerDimensions(stackName: string | undefined): Record<string, string> {
  return stackName ? { service: SERVICE_NAME, [STACK_DIMENSION]: stackName } : { service: SERVICE_NAME };
}

export function powertoolsLogger(logger: Logger = new Logger({ serviceName: SERVICE_NAME })): ChildLogger {
  return {
    debug: (message, ...extra) => logger.debug(message, ...(extra as LogAttributes[])),
    info: (message, ...extra) => logger.info(message, ...(extra as LogAttributes[])),
    warn: (message, ...extra) => logger.warn(message, ...(extra as LogAttributes[])),
    error: (message, ...extra) => logger.error(message, ...(extra as LogAttributes[])),
    child: (keys) => {
      const child = logger.createChild();
      child.appendKeys(keys as LogAttributes);
      return powertoolsLogger(child);
    },
  };
}

const UNITS: Record<Unit, (typeof MetricUnit)[keyof typeof MetricUnit]> = {
  Count: MetricUnit.Count,
  Milliseconds: MetricUnit.Milliseconds,
  Seconds: MetricUnit.Seconds,
};

/** Powertools Metrics in the scheduler namespace, scoped to the stack named by ENV.metricsStack. */
export function schedulerMetrics(env: NodeJS.ProcessEnv = process.env): Metrics {
  const stack = env[ENV.metricsStack];
  return new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: SERVICE_NAME,
    ...(stack ? { defaultDimensions: { [STACK_DIMENSION]: stack } } : {}),
  });
}

export class PowertoolsMetricsSink implements MetricsSink {
  constructor(readonly metrics: Metrics = schedulerMetrics()) {}

  /**
   * One completed tick of a planner partition (MetricName.PlannerTicks, dimension partition):
   * planner-silent alarms per partition, so one silent partition is seen though the others tick.
   */
  plannerTick(partition: number): void {
    const single = this.metrics.singleMetric();
    single.addDimension(PARTITION_DIMENSION, String(partition));
    single.addMetric(MetricName.PlannerTicks, MetricUnit.Count, 1);
  }

  count(name: string, value = 1): void {
    if (value !== 0) this.metrics.addMetric(name, MetricUnit.Count, value);
  }

  observe(name: string, value: number, unit: Unit): void {
    this.metrics.addMetric(name, UNITS[unit], value);
  }

  publish(): void {
    this.metrics.publishStoredMetrics();
  }
}
