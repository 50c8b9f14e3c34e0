/**
 * Drill (f): one job fails forever (retryable errors, crashes, permanent errors, unknown results or
 * timeouts, chosen per iteration) next to healthy jobs firing every second or two, on the real
 * clock, with the real planner and in-process pollers.
 *
 * Must hold: no starvation (every healthy run SUCCEEDED on its first attempt and started within
 * LAG_BOUND_MS of the moment it could start: its slot, or the planner's send if that came later),
 * every run of the failing job ends DEAD within its retry budget, the RunsDead / RunsSucceeded
 * metrics match, and the checker's five invariants.
 *
 * Why from the send: the failing job can only starve healthy runs on the workers' side (its
 * retries are the workers' visibility changes and re-receives; the planner plans it like any
 * other job, once per tick). A planner tick that a loaded machine slows down sends every job's
 * runs late alike; that lateness is reported (maxPlannerLateMs), not counted as starvation.
 */
import type { HistoryEvent } from '../../../shared/core/history.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { percentile } from '../../local-runtime.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation } from '../drill.js';
import type { FailMode } from '../handlers.js';
import { sleepMs, World, SETTLE_MS } from '../world.js';
import { machineMeter } from './common.js';

export const LAG_BOUND_MS = 3_000;
/**
 * The sequential calls between a healthy run's message arriving and its handler starting, when
 * every poller has just received a batch: that batch's claim, outcome and message delete, then
 * the ReceiveMessage that returns this message and its own claim. A loaded machine may make each
 * as slow as the slowest call it saw (machineMeter).
 */
export const WORKER_PATH_CALLS = 5;
const LOOKAHEAD = 4_000;
const TICK_EVERY = 2_000;
const FAIL_MODES: readonly FailMode[] = ['retryable', 'error', 'permanent', 'unknown', 'timeout'];

export const failingJobDrill: Drill = (options) =>
  iterate('failing-job', options, async ({ rng, index, budget, seed }) => {
    const trace = tracer(`failing-job #${index}`, options.log);
    const world = await World.create(options.base, { visibilityTimeoutSeconds: 10, maxReceiveCount: 50 }, options.log);
    // The lag bound is about the failing job never delaying healthy runs. A loaded machine (this
    // process stalled, DynamoDB Local or the SQS emulator starved) delays every run alike: its
    // measured slack is added to the bound. It does not grow with the failing job: its retries
    // are a handful of calls a second.
    const machine = machineMeter(world);
    try {
      const prefix = `f${index}-${rng.int(0, 46_655).toString(36)}`;
      const failMode = rng.pick(FAIL_MODES);
      const maxAttempts = rng.int(2, 4);
      const healthy = Array.from({ length: budget >= 400 ? rng.int(8, 16) : rng.int(4, 8) }, (_, i) => ({
        name: `${prefix}-ok${i}`,
        every: rng.pick([1_000, 2_000]),
      }));
      const failingEvery = rng.pick([1_000, 2_000]);
      const failing = `${prefix}-bad`;
      const cron = (every: number) => (every === 1_000 ? '* * * * * *' : '*/2 * * * * *');
      world.setJobs([
        ...healthy.map((h) => ({ name: h.name, schedule: cron(h.every), handler: 'charge', lease: '10s', timeout: '5s' })),
        {
          name: failing,
          schedule: cron(failingEvery),
          handler: 'failing',
          lease: '10s',
          timeout: 400,
          retry: { maxAttempts, backoff: { base: 100, max: 800, jitter: 'full' as const } },
        },
      ]);
      const rate = healthy.reduce((n, h) => n + 1_000 / h.every, 0) + 1_000 / failingEvery;
      const durationMs = Math.round(Math.max(6, Math.min(40, budget / rate)) * 1_000);
      // Like the event source mapping scaling out: a local poller handles ~3 runs/s (1 s long poll,
      // then its batch waits out startLead), so capacity follows the load instead of capping it.
      const workers = Math.max(rng.int(2, 4), Math.ceil(rate / 2.5));
      for (let i = 0; i < workers; i++)
        world.startPoller({ owner: `${prefix}-w${i}`, handlerConfig: { seed, workMs: [0, 30], failMode }, clockSkewMs: 500 });

      const ticks: number[] = [];
      const started = Date.now();
      while (Date.now() - started < durationMs) {
        const at = Date.now();
        await world.tick(Date.now, { lookaheadMs: LOOKAHEAD, sweepGraceMs: 60_000 });
        ticks.push(at);
        await sleepMs(TICK_EVERY - (Date.now() - at));
      }
      trace('ticking');
      const first = ticks[0]!;
      const horizon = Math.max(...world.events.filter((e) => e.type === 'run-created').map((e) => e.at)) + LOOKAHEAD;
      const ids = world.events.filter((e) => e.type === 'run-created').map((e) => e as Extract<HistoryEvent, { type: 'run-created' }>);
      const settled = await world.waitForRuns(ids, SETTLE_MS + maxAttempts * 2_000);
      trace('settle');
      await world.stopPollers();

      // Oracle: every slot of every job in (first tick, last tick + lookahead].
      const lastHorizon = Math.min(horizon, ticks[ticks.length - 1]! + LOOKAHEAD);
      const slots = [
        ...healthy.map((h) => ({ name: h.name, every: h.every, status: RunStatus.SUCCEEDED })),
        { name: failing, every: failingEvery, status: RunStatus.DEAD },
      ].flatMap((job) => {
        const out = [];
        for (let slot = Math.floor(first / job.every) * job.every + job.every; slot <= lastHorizon; slot += job.every) {
          if (slot > first) out.push({ job: job.name, slot, statuses: [job.status] });
        }
        return out;
      });
      const { result, runs } = await world.check({ slots });
      const violations: DrillViolation[] = invariantViolations(result);
      if (!settled)
        violations.push({
          invariant: 'no-lost-slot',
          runKey: prefix,
          detail: `runs still open ${SETTLE_MS / 1000} s after the planner stopped`,
        });

      const healthyRuns = runs.filter((r) => r.job !== failing);
      const failingRuns = runs.filter((r) => r.job === failing);
      // When each run could start: its slot, or its first planned send if the planner was late.
      const sentAt = new Map<string, number>();
      for (const e of world.events)
        if (e.type === 'message-sent' && e.reason === 'planned' && !sentAt.has(e.runKey)) sentAt.set(e.runKey, e.at);
      const startable = new Map<string, number>();
      const plannerLate: number[] = [];
      for (const e of ids) {
        const sent = sentAt.get(e.runKey);
        startable.set(e.runKey, Math.max(e.slot, sent ?? e.slot));
        if (sent !== undefined) plannerLate.push(Math.max(0, sent - e.slot));
      }
      const firstStart = new Map<string, number>();
      for (const e of world.events) if (e.type === 'handler-started' && !firstStart.has(e.runKey)) firstStart.set(e.runKey, e.at);
      // A run the planner did not report creating counts from its slot.
      const lagOf = (run: { readonly runKey: string; readonly slot: number }) => {
        const started = firstStart.get(run.runKey);
        return started === undefined ? undefined : started - (startable.get(run.runKey) ?? run.slot);
      };
      const lags = healthyRuns.map((r) => lagOf(r) ?? Infinity);
      machine.stop();
      const stallMs = machine.stallMs();
      const slowestCallMs = machine.slowestCallMs();
      const bound = LAG_BOUND_MS + machine.slackMs(WORKER_PATH_CALLS);
      for (const run of healthyRuns) {
        const lag = lagOf(run);
        if (lag === undefined || lag > bound) {
          violations.push({
            invariant: 'starvation',
            runKey: run.runKey,
            detail:
              lag === undefined
                ? 'healthy run never started'
                : `healthy run started ${lag} ms after it could (its slot, or the planner's send; bound ${LAG_BOUND_MS} ms + ${stallMs} ms this process stalled + ${WORKER_PATH_CALLS} × ${slowestCallMs} ms the slowest DynamoDB or SQS call)`,
          });
        }
        if (run.attempt !== 1)
          violations.push({ invariant: 'starvation', runKey: run.runKey, detail: `healthy run needed ${run.attempt} attempts` });
      }
      for (const run of failingRuns) {
        const budgetLeft = failMode === 'permanent' ? 1 : maxAttempts;
        if (run.status === RunStatus.DEAD && run.attempt > budgetLeft) {
          violations.push({
            invariant: 'retry-budget',
            runKey: run.runKey,
            detail: `failing run (${failMode}) used ${run.attempt} attempts, budget ${budgetLeft}`,
          });
        }
      }
      const dead = world.metrics.get('RunsDead');
      const succeeded = world.metrics.get('RunsSucceeded');
      const deadRuns = failingRuns.filter((r) => r.status === RunStatus.DEAD).length;
      if (dead !== deadRuns)
        violations.push({ invariant: 'metrics', runKey: failing, detail: `RunsDead metric ${dead}, DEAD runs ${deadRuns}` });
      if (succeeded !== healthyRuns.filter((r) => r.status === RunStatus.SUCCEEDED).length) {
        violations.push({
          invariant: 'metrics',
          runKey: prefix,
          detail: `RunsSucceeded metric ${succeeded}, SUCCEEDED runs ${healthyRuns.length}`,
        });
      }
      for (const error of world.errors.slice(0, 3))
        violations.push({ invariant: 'drill-error', runKey: prefix, detail: `poller error: ${error}` });
      return {
        runs: runs.length,
        faults: failingRuns.length,
        check: result,
        violations,
        facts: {
          healthyRuns: healthyRuns.length,
          failingRuns: failingRuns.length,
          runsDeadMetric: dead,
          attemptsOfFailingRuns: failingRuns.reduce((n, r) => n + r.attempt, 0),
          maxHealthyLagMs: Math.max(0, ...lags.filter(Number.isFinite)),
          maxHealthyLagP99Ms: percentile(lags.filter(Number.isFinite), 99),
          maxPlannerLateMs: Math.max(0, ...plannerLate),
          lagBoundMs: bound,
          slowestLedgerCallMs: slowestCallMs,
          eventLoopStallMs: stallMs,
          maxWorkers: workers,
        },
        observations: [`fail modes exercised include ${failMode}`],
      };
    } finally {
      machine.stop();
      await world.destroy();
    }
  });
