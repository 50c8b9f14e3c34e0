/** Powertools Logger and Metrics (EMF) behind the planner's and worker's small seams. */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ChildLogger } from './worker.js';
import type { MetricsSink, MetricUnit as Unit } from './observability.js';

export const SERVICE_NAME = 'scheduler';
export const METRICS_NAMESPACE = 'FencedScheduler';

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

export class PowertoolsMetricsSink implements MetricsSink {
  constructor(readonly metrics: Metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME })) {}

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
