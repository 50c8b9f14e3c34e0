/**
 * What the Lambdas publish (EMF through Powertools): every metric carries the stack named by
 * METRICS_STACK, so two stacks in one account do not share series, and a completed planner tick
 * is counted per partition. Locally (no METRICS_STACK) the metrics keep the service dimension only.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MetricName } from '../../shared/runtime/observability.js';
import { PowertoolsMetricsSink, schedulerMetrics, METRICS_NAMESPACE } from '../../shared/runtime/powertools.js';
import { ENV } from '../../shared/core/resources.js';

interface Emf {
  readonly _aws: { readonly CloudWatchMetrics: readonly { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  readonly [key: string]: unknown;
}

/** The EMF documents a function writes to stdout while `act` runs. */
function emfWritten(act: () => void): Emf[] {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    act();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"_aws"'))
    .map((l) => JSON.parse(l) as Emf);
}

describe('metric dimensions', () => {
  afterEach(() => vi.restoreAllMocks());

  it("a staging metric cannot land in production's series: every metric carries stack=<METRICS_STACK>", () => {
    const sink = new PowertoolsMetricsSink(schedulerMetrics({ [ENV.metricsStack]: 'Staging' }));
    const [emf] = emfWritten(() => {
      sink.count(MetricName.RunsDead);
      sink.publish();
    });
    expect(emf!._aws.CloudWatchMetrics[0]!.Namespace).toBe(METRICS_NAMESPACE);
    expect(emf!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service', 'stack']]);
    expect(emf).toMatchObject({ service: 'scheduler', stack: 'Staging', RunsDead: 1 });
  });

  it('without METRICS_STACK (local runtime, tests) the metrics keep the service dimension alone', () => {
    const sink = new PowertoolsMetricsSink(schedulerMetrics({}));
    const [emf] = emfWritten(() => {
      sink.count(MetricName.RunsDead);
      sink.publish();
    });
    expect(emf!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
  });

  it('a completed planner tick is one PlannerTicks datapoint of its partition, with the stack dimension', () => {
    const sink = new PowertoolsMetricsSink(schedulerMetrics({ [ENV.metricsStack]: 'Production' }));
    const [emf] = emfWritten(() => sink.plannerTick(2));
    expect(emf!._aws.CloudWatchMetrics[0]!.Metrics).toEqual([expect.objectContaining({ Name: MetricName.PlannerTicks })]);
    expect(emf).toMatchObject({ service: 'scheduler', stack: 'Production', partition: '2', PlannerTicks: 1 });
    expect([...emf!._aws.CloudWatchMetrics[0]!.Dimensions[0]!].sort()).toEqual(['partition', 'service', 'stack']);
  });
});
