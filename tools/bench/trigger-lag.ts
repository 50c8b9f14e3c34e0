/**
 * Trigger lag (handler start − slot) of jobs that fire every 10 seconds, through LocalRuntime on
 * real time: the planner ticks on its timer (as EventBridge would), runs are enqueued `startLead`
 * early with whole-second SQS delays, and the worker waits out the rest before starting the
 * handler. Several such jobs are staggered by one second so one run lasts the same as a lone
 * job's run but the sample is large enough for a p99. Slots in the first seconds after start
 * (planned by the very first tick, as after a deployment) are left out.
 */
import { parseJobs } from '../../shared/core/job-schema.js';
import { LocalRuntime, percentile } from '../local-runtime.js';
import type { LocalEndpoints } from '../local-stack.js';
import { noopHandlers } from './end-to-end.js';
import { freshResources, mean, round, sleepMs, SqsMeter } from './measure.js';

export interface TriggerLagOptions {
  readonly base: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>;
  readonly durationMs: number;
  /** Jobs every 10 s, at seconds i, 10 + i, ... (i < 10). */
  readonly jobs: number;
  readonly tickSeconds: number;
  readonly workers: number;
  /** Slots earlier than start + this are not sampled. @default 5 s */
  readonly warmupMs?: number;
}

export interface TriggerLagResult {
  readonly samples: number;
  readonly expectedSamples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly minMs: number;
  /** Claim → handler start: the startLead wait the worker spends (and Lambda bills) per run. */
  readonly leadWaitMeanMs: number;
  /** Claim → accepted outcome per run (the handler-side time of a sparse, one-run invocation). */
  readonly claimToOutcomeMeanMs: number;
  readonly startLeadMs: number;
  readonly durationMs: number;
  /**
   * Runs that started more than 50 ms late, with how much notice the planner gave them (slot −
   * the tick that created the run) and how late their message was sent (sent − (slot − startLead)).
   */
  readonly lateRuns: readonly { readonly lagMs: number; readonly noticeMs: number; readonly sentLateMs: number; readonly claimedMs: number }[];
  /** Steady state on real time: the scheduler's SQS calls per run the planner created (every tick of the phase). */
  readonly runsCreated: number;
  readonly sqsCallsPerRun: number;
  readonly sqsByCommand: Record<string, number>;
  readonly violations: number;
}

export async function measureTriggerLag(options: TriggerLagOptions): Promise<TriggerLagResult> {
  const endpoints = await freshResources(options.base, 'lag', { visibilityTimeoutSeconds: 60 });
  const jobs = parseJobs(
    Array.from({ length: options.jobs }, (_, i) => ({ name: `bench-lag-${i}`, schedule: `${i % 10}/10 * * * * *`, handler: 'bench-noop' })),
    { handlers: Object.keys(noopHandlers) },
  );
  const runtime = new LocalRuntime({ endpoints, jobs, handlers: noopHandlers, workers: options.workers });
  const sqs = new SqsMeter().attach(runtime.clients.sqs);
  const startedAt = Date.now();
  const sampleFrom = startedAt + (options.warmupMs ?? 5_000);
  const sampleUntil = startedAt + options.durationMs;
  runtime.start(options.tickSeconds);
  try {
    await sleepMs(options.durationMs + 1_500);
  } finally {
    await runtime.stop();
  }
  const events = runtime.events;
  const started = events.filter((e) => e.type === 'handler-started' && e.slot >= sampleFrom && e.slot <= sampleUntil);
  const lags = started.map((e) => (e.type === 'handler-started' ? e.at - e.slot : 0));
  const createdAt = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const firstClaimAt = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'run-created') createdAt.set(e.runKey, e.at);
    if (e.type === 'message-sent' && !sentAt.has(e.runKey)) sentAt.set(e.runKey, e.at);
    if (e.type === 'claimed' && !firstClaimAt.has(e.runKey)) firstClaimAt.set(e.runKey, e.at);
  }
  const startLead = jobs[0]?.startLead ?? 0;
  const lateRuns = started
    .filter((e): e is Extract<typeof e, { type: 'handler-started' }> => e.type === 'handler-started' && e.at - e.slot > 50)
    .map((e) => ({
      lagMs: e.at - e.slot,
      noticeMs: e.slot - (createdAt.get(e.runKey) ?? e.slot),
      sentLateMs: (sentAt.get(e.runKey) ?? 0) - (e.slot - startLead),
      claimedMs: (firstClaimAt.get(e.runKey) ?? 0) - e.slot,
    }));
  const claims = new Map<string, number>();
  const outcomes = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'claimed') claims.set(`${e.runKey}/${e.token}`, e.at);
    if (e.type === 'outcome' && e.accepted) outcomes.set(`${e.runKey}/${e.token}`, e.at);
  }
  const leadWaits: number[] = [];
  const claimToOutcome: number[] = [];
  for (const e of started) {
    if (e.type !== 'handler-started') continue;
    const key = `${e.runKey}/${e.token}`;
    const claimedAt = claims.get(key);
    if (claimedAt === undefined) continue;
    leadWaits.push(e.at - claimedAt);
    const doneAt = outcomes.get(key);
    if (doneAt !== undefined) claimToOutcome.push(doneAt - claimedAt);
  }
  // Each job fires every 10 s: count the slots of the sampled window.
  let expected = 0;
  for (let i = 0; i < options.jobs; i++) {
    for (let t = Math.ceil((sampleFrom - (i % 10) * 1000) / 10_000) * 10_000 + (i % 10) * 1000; t <= sampleUntil; t += 10_000) if (t >= sampleFrom) expected++;
  }
  return {
    samples: lags.length,
    expectedSamples: expected,
    p50Ms: percentile(lags, 50),
    p99Ms: percentile(lags, 99),
    maxMs: lags.length ? Math.max(...lags) : 0,
    minMs: lags.length ? Math.min(...lags) : 0,
    leadWaitMeanMs: round(mean(leadWaits), 1),
    claimToOutcomeMeanMs: round(mean(claimToOutcome), 1),
    startLeadMs: startLead,
    lateRuns,
    durationMs: options.durationMs,
    runsCreated: createdAt.size,
    sqsCallsPerRun: round(sqs.schedulerCalls / Math.max(1, createdAt.size), 4),
    sqsByCommand: sqs.byCommand(),
    violations: runtime.violations.length,
  };
}
