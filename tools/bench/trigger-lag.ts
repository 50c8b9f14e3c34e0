/**
 * Trigger lag (handler start − slot) of jobs that fire every 10 seconds, through LocalRuntime on
 * real time: the planner ticks on its timer (as EventBridge would) and the workers poll as the
 * event source mapping does. Two sets of jobs run side by side, each on its own runtime, tables
 * and queue (so no poll hands a worker one message of each), staggered by one second within each
 * set so one run lasts the same as a lone job's run but the sample is large enough for a p99:
 *  - precision jobs (`startLead: '1500ms'`): enqueued startLead early with whole-second SQS
 *    delays; the worker waits out the rest and the handler starts on the slot's millisecond;
 *  - default jobs (`startLead` as the schema defaults it, 0): the message becomes visible in the
 *    second after the slot and the handler starts when it is delivered, with no wait to pay.
 * Slots in the first seconds after start (planned by the very first tick, as after a deployment)
 * are left out.
 *
 * The default jobs are the sparse case of the cost model: each run is alone in its invocation.
 * Their invocations are timed (processBatch of a one-record batch: the Lambda time a sparse run
 * bills), and the SQS calls of the phase are counted: the scheduler's per planned run, the event
 * source's (receives that returned messages, deletes) per executed run.
 */
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { LocalRuntime, percentile } from '../local-runtime.js';
import type { LocalEndpoints } from '../local-stack.js';
import { noopHandlers } from './end-to-end.js';
import { freshResources, mean, round, sleepMs, SqsMeter } from './measure.js';

/** The start precision the precision jobs ask for (sub-second, paid in Lambda time). */
export const PRECISION_START_LEAD = '1500ms';
const PRECISION_PREFIX = 'bench-lag-precise-';
const DEFAULT_PREFIX = 'bench-lag-default-';

export interface TriggerLagOptions {
  readonly base: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>;
  readonly durationMs: number;
  /** Jobs per set (precision and default) every 10 s, at seconds i, 10 + i, ... (i < 10). */
  readonly jobs: number;
  readonly tickSeconds: number;
  readonly workers: number;
  /** Slots earlier than start + this are not sampled. @default 5 s */
  readonly warmupMs?: number;
}

/** Lag and cost figures of one set of jobs. */
export interface LagSet {
  readonly samples: number;
  readonly expectedSamples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly minMs: number;
  readonly startLeadMs: number;
  /** Claim → handler start: the startLead wait the worker spends (and Lambda bills) per run. */
  readonly leadWaitMeanMs: number;
  /** Claim → accepted outcome per run. */
  readonly claimToOutcomeMeanMs: number;
  /** One-record invocations of this set: processBatch time, mean and mean rounded up to Lambda's 1 ms billing. */
  readonly soloInvocations: number;
  readonly soloInvocationMeanMs: number;
  readonly soloInvocationBilledMeanMs: number;
  /** Runs of this set with an accepted outcome during the phase. */
  readonly runsExecuted: number;
  /** This set's own queue: the scheduler's calls per planned run, the event source's per executed run. */
  readonly sqsCallsPerRun: number;
  readonly eventSourceSqsCallsPerRun: number;
  /**
   * Runs that started more than 50 ms late, with how much notice the planner gave them (slot −
   * the tick that created the run) and how late their message was sent (sent − (slot − startLead)).
   */
  readonly lateRuns: readonly {
    readonly lagMs: number;
    readonly noticeMs: number;
    readonly sentLateMs: number;
    readonly claimedMs: number;
  }[];
  readonly runsCreated: number;
}

export interface TriggerLagResult {
  readonly precision: LagSet;
  readonly defaults: LagSet;
  readonly durationMs: number;
  /** Steady state on real time: the scheduler's SQS calls per run the planner created (both sets, every tick of the phase). */
  readonly runsCreated: number;
  readonly sqsCallsPerRun: number;
  readonly sqsByCommand: Record<string, number>;
  /** The event source mapping's calls (receives that returned messages + deletes) per executed run. */
  readonly eventSourceSqsCallsPerRun: number;
  readonly runsExecuted: number;
  readonly violations: number;
}

function lagJobs(count: number, prefix: string, startLead: string | undefined) {
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}${i}`,
    schedule: `${i % 10}/10 * * * * *`,
    handler: 'bench-noop',
    ...(startLead !== undefined ? { startLead } : {}),
  }));
}

export async function measureTriggerLag(options: TriggerLagOptions): Promise<TriggerLagResult> {
  // Each set on its own runtime, tables and queue: a poll never hands a worker one message of each.
  const sets = await Promise.all(
    [
      { prefix: PRECISION_PREFIX, startLead: PRECISION_START_LEAD as string | undefined },
      { prefix: DEFAULT_PREFIX, startLead: undefined },
    ].map(async ({ prefix, startLead }) => {
      const endpoints = await freshResources(options.base, `lag-${startLead === undefined ? 'default' : 'precise'}`, {
        visibilityTimeoutSeconds: 60,
      });
      const jobs = parseJobs(lagJobs(options.jobs, prefix, startLead), { handlers: Object.keys(noopHandlers) });
      const solo: number[] = [];
      const runtime = new LocalRuntime({
        endpoints,
        jobs,
        handlers: noopHandlers,
        workers: Math.max(1, Math.round(options.workers / 2)),
        onBatch: (records, ms) => {
          if (records.length === 1) solo.push(ms);
        },
      });
      return { jobs, solo, runtime, sqs: new SqsMeter().attach(runtime.clients.sqs) };
    }),
  );
  const startedAt = Date.now();
  const sampleFrom = startedAt + (options.warmupMs ?? 5_000);
  const sampleUntil = startedAt + options.durationMs;
  for (const set of sets) set.runtime.start(options.tickSeconds);
  try {
    await sleepMs(options.durationMs + 2_500);
  } finally {
    await Promise.all(sets.map((set) => set.runtime.stop()));
  }
  const [precision, defaults] = sets.map((set) =>
    lagSet(set.runtime, set.jobs, new Set(set.jobs.map((j) => j.name)), sampleFrom, sampleUntil, set.solo, set.sqs),
  ) as [LagSet, LagSet];
  const runsCreated = precision.runsCreated + defaults.runsCreated;
  const runsExecuted = precision.runsExecuted + defaults.runsExecuted;
  const schedulerCalls = sets.reduce((n, set) => n + set.sqs.schedulerCalls, 0);
  const eventSourceCalls = sets.reduce((n, set) => n + set.sqs.eventSourceCalls, 0);
  const sqsByCommand: Record<string, number> = {};
  for (const set of sets) for (const [name, n] of Object.entries(set.sqs.byCommand())) sqsByCommand[name] = (sqsByCommand[name] ?? 0) + n;
  return {
    precision,
    defaults,
    durationMs: options.durationMs,
    runsCreated,
    sqsCallsPerRun: round(schedulerCalls / Math.max(1, runsCreated), 4),
    sqsByCommand,
    eventSourceSqsCallsPerRun: round(eventSourceCalls / Math.max(1, runsExecuted), 4),
    runsExecuted,
    violations: sets.reduce((n, set) => n + set.runtime.violations.length, 0),
  };
}

function lagSet(
  runtime: LocalRuntime,
  jobs: readonly Job[],
  names: ReadonlySet<string>,
  sampleFrom: number,
  sampleUntil: number,
  soloMs: readonly number[],
  sqs: SqsMeter,
): LagSet {
  const events = runtime.events;
  const started = events.filter(
    (e): e is Extract<typeof e, { type: 'handler-started' }> =>
      e.type === 'handler-started' && e.slot >= sampleFrom && e.slot <= sampleUntil,
  );
  const lags = started.map((e) => e.at - e.slot);
  const createdAt = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const firstClaimAt = new Map<string, number>();
  const claims = new Map<string, number>();
  const outcomes = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'run-created') createdAt.set(e.runKey, e.at);
    if (e.type === 'message-sent' && !sentAt.has(e.runKey)) sentAt.set(e.runKey, e.at);
    if (e.type === 'claimed') {
      if (!firstClaimAt.has(e.runKey)) firstClaimAt.set(e.runKey, e.at);
      claims.set(`${e.runKey}/${e.token}`, e.at);
    }
    if (e.type === 'outcome' && e.accepted) outcomes.set(`${e.runKey}/${e.token}`, e.at);
  }
  const startLead = jobs[0]?.startLead ?? 0;
  const lateRuns = started
    .filter((e) => e.at - e.slot > 50)
    .map((e) => ({
      lagMs: e.at - e.slot,
      noticeMs: e.slot - (createdAt.get(e.runKey) ?? e.slot),
      sentLateMs: (sentAt.get(e.runKey) ?? 0) - (e.slot - startLead),
      claimedMs: (firstClaimAt.get(e.runKey) ?? 0) - e.slot,
    }));
  const leadWaits: number[] = [];
  const claimToOutcome: number[] = [];
  for (const e of started) {
    const key = `${e.runKey}/${e.token}`;
    const claimedAt = claims.get(key);
    if (claimedAt === undefined) continue;
    leadWaits.push(e.at - claimedAt);
    const doneAt = outcomes.get(key);
    if (doneAt !== undefined) claimToOutcome.push(doneAt - claimedAt);
  }
  // Each job fires every 10 s: count the slots of the sampled window.
  let expected = 0;
  jobs.forEach((_, i) => {
    for (let t = Math.ceil((sampleFrom - (i % 10) * 1000) / 10_000) * 10_000 + (i % 10) * 1000; t <= sampleUntil; t += 10_000)
      if (t >= sampleFrom) expected++;
  });
  return {
    samples: lags.length,
    expectedSamples: expected,
    p50Ms: percentile(lags, 50),
    p99Ms: percentile(lags, 99),
    maxMs: lags.length ? Math.max(...lags) : 0,
    minMs: lags.length ? Math.min(...lags) : 0,
    startLeadMs: startLead,
    leadWaitMeanMs: round(mean(leadWaits), 1),
    claimToOutcomeMeanMs: round(mean(claimToOutcome), 1),
    soloInvocations: soloMs.length,
    soloInvocationMeanMs: round(mean(soloMs), 2),
    soloInvocationBilledMeanMs: round(mean(soloMs.map((ms) => Math.ceil(ms))), 2),
    runsExecuted: new Set([...outcomes.keys()].map((key) => key.slice(0, key.lastIndexOf('/')))).size,
    sqsCallsPerRun: round(sqs.schedulerCalls / Math.max(1, createdAt.size), 4),
    eventSourceSqsCallsPerRun: round(
      sqs.eventSourceCalls / Math.max(1, new Set([...outcomes.keys()].map((key) => key.slice(0, key.lastIndexOf('/')))).size),
      4,
    ),
    lateRuns,
    runsCreated: createdAt.size,
  };
}
