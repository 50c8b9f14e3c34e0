/**
 * Drill (e): the planner is down for ten minutes (manual clock), then resumes. Jobs with every
 * misfire policy (skip / latest / all with maxPerTick) and misfire windows run next to each other.
 *
 * An independent oracle (fixed-interval schedules, so plain arithmetic) says which slot each tick
 * first sees and whether it is a misfire (due more than `misfire.after` before that tick). It must
 * hold that:
 *  - on-time slots are SUCCEEDED, created in the first tick that sees them (the first tick after
 *    resume for those in the window), and sent before any catch-up run of that tick;
 *  - misfired slots follow the policy: skip → SKIPPED; latest → only the newest one of the tick
 *    runs, the others get no run item; all → every one runs, at most maxPerTick per tick;
 *  - catch-up ends: once the missed slots are planned the job is no longer "behind";
 *  - the checker's five invariants.
 */
import { jobPlanning } from '../../../shared/store/job-planning.js';
import { partitionOf } from '../../../shared/core/partition.js';
import type { HistoryEvent } from '../../../shared/core/history.js';
import type { ExpectedSlot } from '../../verify/checker.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import type { LocalEndpoints } from '../../local-stack.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation, type IterationReport } from '../drill.js';
import type { Rng } from '../rng.js';
import { World } from '../world.js';

const SCHEDULES = [
  { cron: '*/10 * * * * *', every: 10_000 },
  { cron: '*/15 * * * * *', every: 15_000 },
  { cron: '*/20 * * * * *', every: 20_000 },
  { cron: '*/30 * * * * *', every: 30_000 },
  { cron: '* * * * *', every: 60_000 },
  { cron: '*/2 * * * *', every: 120_000 },
] as const;
const AFTER = [10_000, 30_000, 60_000, 120_000, 300_000, 900_000] as const;
const POLICIES = ['skip', 'latest', 'all'] as const;
const LOOKAHEAD = 60_000;
const DOWN_MS = 10 * 60_000;

export interface PlannerDownJob {
  readonly name: string;
  readonly every: number;
  readonly policy: (typeof POLICIES)[number];
  readonly after: number;
  readonly maxPerTick: number;
  readonly shards: number;
}

/** What the oracle says about one slot. */
interface SlotFate {
  readonly job: PlannerDownJob;
  readonly slot: number;
  /** Index of the tick that first saw it. */
  readonly tick: number;
  readonly misfire: boolean;
  /** Statuses it may end in, or undefined when the policy keeps no run for it. */
  readonly statuses: readonly RunStatus[] | undefined;
}

export const plannerDownDrill: Drill = (options) =>
  iterate('planner-down', options, async ({ rng, index, budget, seed }) => {
    const prefix = `e${index}-${rng.int(0, 46_655).toString(36)}`;
    const count = Math.max(3, Math.min(6, Math.round(budget / 120)));
    const policies = [...POLICIES].sort(() => rng.next() - 0.5);
    const plans: PlannerDownJob[] = Array.from({ length: count }, (_, i) => {
      const schedule = rng.pick(budget < 200 ? SCHEDULES.slice(2) : SCHEDULES);
      return {
        name: `${prefix}-${i}`,
        every: schedule.every,
        policy: policies[i % policies.length]!,
        after: rng.pick(AFTER),
        // Small enough to page the catch-up over several ticks, large enough to finish within ~25.
        maxPerTick: rng.int(Math.max(1, Math.ceil((DOWN_MS + 2 * LOOKAHEAD) / schedule.every / 25)), 12),
        shards: rng.chance(0.2) ? 2 : 1,
      };
    });
    return plannerDownScenario({ base: options.base, plans, rng, index, seed, log: options.log });
  });

/** Schedules the drill can give a job (fixed intervals, so the oracle is plain arithmetic). */
export const PLANNER_DOWN_EVERY = SCHEDULES.map((s) => s.every);

/** One planner-down iteration with the given jobs (`every` must be one of PLANNER_DOWN_EVERY). */
export async function plannerDownScenario(input: {
  readonly base: LocalEndpoints;
  readonly plans: readonly PlannerDownJob[];
  readonly rng: Rng;
  readonly index: number;
  readonly seed: number;
  readonly log?: (line: string) => void;
}): Promise<IterationReport> {
  const { plans, rng, index, seed } = input;
  const trace = tracer(`planner-down #${index}`, input.log);
  const world = await World.create(input.base, { visibilityTimeoutSeconds: 60 }, input.log);
  try {
    const prefix = plans[0]!.name;
    if (process.env.CHAOS_DEBUG) input.log?.(`plans ${JSON.stringify(plans)}`);
    world.setJobs(
      plans.map((p) => ({
        name: p.name,
        schedule: SCHEDULES.find((s) => s.every === p.every)!.cron,
        handler: 'charge',
        shards: p.shards,
        startLead: '15m',
        misfire: { after: p.after, policy: p.policy, maxPerTick: p.maxPerTick },
      })),
    );
    let now = Date.UTC(2032, 0, 1) + index * 86_400_000 + rng.int(0, 59_999);
    const clock = () => now;
    const lanes = [0, 1, 2, 3, 4].map((i) =>
      world.workerDeps({ owner: `${prefix}-w${i}`, clock, handlerConfig: { seed, workMs: [0, 0] } }),
    );
    const plannerOptions = { lookaheadMs: LOOKAHEAD, sweepGraceMs: 120_000 };
    const ticks: number[] = [];
    const fates = new Map<string, SlotFate>();
    let watermark: number | undefined;
    const behindAt: { tick: number; behind: Set<string> }[] = [];

    const tick = async () => {
      // Oracle first: the slots this tick sees for the first time, and what becomes of them.
      const k = ticks.length;
      const from = watermark ?? now;
      for (const plan of plans) {
        const seen: number[] = [];
        for (let slot = Math.floor(from / plan.every) * plan.every + plan.every; slot <= now + LOOKAHEAD; slot += plan.every)
          if (slot > from) seen.push(slot);
        const misfires = seen.filter((s) => s < now - plan.after);
        const newest = misfires[misfires.length - 1];
        for (const slot of seen) {
          const misfire = slot < now - plan.after;
          const statuses: readonly RunStatus[] | undefined = !misfire
            ? [RunStatus.SUCCEEDED]
            : plan.policy === 'skip'
              ? [RunStatus.SKIPPED]
              : plan.policy === 'all' || slot === newest
                ? [RunStatus.SUCCEEDED]
                : undefined;
          fates.set(`${plan.name}|${slot}`, { job: plan, slot, tick: k, misfire, statuses });
        }
      }
      watermark = Math.max(watermark ?? -Infinity, now + LOOKAHEAD);
      ticks.push(now);
      await world.tick(clock, plannerOptions);
      const planning = await jobPlanning(
        world.ledger.planning,
        plans.map((p) => p.name),
        partitionOf,
        now,
      );
      if (process.env.CHAOS_DEBUG) {
        input.log?.(
          `tick ${k} now=${new Date(now).toISOString()} behind=${JSON.stringify([...planning.values()].filter((p) => p.behind).map((p) => [p.job, p.plannedUntil && new Date(p.plannedUntil).toISOString()]))}`,
        );
      }
      behindAt.push({ tick: k, behind: new Set(plans.filter((p) => planning.get(p.name)?.behind).map((p) => p.name)) });
      now += LOOKAHEAD + rng.int(-3_000, 3_000);
      await world.drain(lanes);
      trace(`tick ${k}`);
    };

    const preTicks = rng.int(1, 3);
    for (let k = 0; k < preTicks; k++) await tick();
    // Down: no tick for ten minutes after the last one's successor was due.
    now = ticks[ticks.length - 1]! + LOOKAHEAD + DOWN_MS + rng.int(-3_000, 3_000);
    const resumeTick = ticks.length;
    const missed = new Map(plans.map((p) => [p.name, 0]));
    await tick();
    for (const fate of fates.values())
      if (fate.tick === resumeTick && fate.misfire) missed.set(fate.job.name, missed.get(fate.job.name)! + 1);
    // Ticks the catch-up needs (a full last page stays behind one more tick), plus one of slack.
    const needed = Math.max(
      1,
      ...plans.filter((p) => p.policy !== 'latest').map((p) => Math.floor(missed.get(p.name)! / p.maxPerTick) + 1),
    );
    for (let k = 0; k < Math.min(needed + 1, 60); k++) await tick();

    // ---------------------------------------------------------------- checks
    const violations: DrillViolation[] = [];
    const slots: ExpectedSlot[] = [];
    for (const fate of fates.values()) {
      if (!fate.statuses) continue;
      for (let shard = 0; shard < fate.job.shards; shard++)
        slots.push({ job: fate.job.name, slot: fate.slot, shard, shards: fate.job.shards, statuses: fate.statuses });
    }
    const { result, runs } = await world.check({ slots });
    violations.push(...invariantViolations(result));

    for (const run of runs) {
      const fate = fates.get(`${run.job}|${run.slot}`);
      if (!fate) violations.push({ invariant: 'misfire-policy', runKey: run.runKey, detail: 'a run item for a slot no tick planned' });
      else if (!fate.statuses) {
        violations.push({
          invariant: 'misfire-policy',
          runKey: run.runKey,
          detail: `policy latest keeps only the newest missed slot, but this older one got a run (${run.status})`,
        });
      }
    }

    const created = world.events.filter((e): e is Extract<HistoryEvent, { type: 'run-created' }> => e.type === 'run-created');
    const sent = world.events.filter(
      (e): e is Extract<HistoryEvent, { type: 'message-sent' }> => e.type === 'message-sent' && e.reason === 'planned',
    );
    const createdAt = new Map(created.map((e) => [e.runKey, e]));
    const createdBySlot = new Map(created.map((e) => [`${e.job}|${e.slot}|${e.shard}`, e]));
    const byTick = <T extends { at: number }>(events: readonly T[]) => {
      const map = new Map<number, T[]>();
      for (const e of events) map.set(e.at, [...(map.get(e.at) ?? []), e]);
      return map;
    };
    const createdByTick = byTick(created);
    const sentByTick = byTick(sent);
    const afterOf = new Map(plans.map((p) => [p.name, p.after]));
    const fatesByTick = new Map<number, SlotFate[]>();
    for (const fate of fates.values()) fatesByTick.set(fate.tick, [...(fatesByTick.get(fate.tick) ?? []), fate]);
    for (const [k, at] of ticks.entries()) {
      const thisTick = createdByTick.get(at) ?? [];
      for (const plan of plans) {
        // Rate limit: catch-up runs (misfired slots) created by this tick.
        const catchUp = thisTick.filter((e) => e.job === plan.name && e.slot < at - plan.after);
        const limit = (plan.policy === 'latest' ? 1 : plan.maxPerTick) * plan.shards;
        if (catchUp.length > limit) {
          violations.push({
            invariant: 'catch-up-rate',
            runKey: catchUp[0]!.runKey,
            detail: `tick ${k} created ${catchUp.length} catch-up runs of ${plan.name} (policy ${plan.policy}, maxPerTick ${plan.maxPerTick}, shards ${plan.shards})`,
          });
        }
      }
      // On time: every on-time slot first seen by this tick was created by this tick ...
      for (const fate of fatesByTick.get(k) ?? []) {
        if (fate.misfire) continue;
        for (let shard = 0; shard < fate.job.shards; shard++) {
          const event = createdBySlot.get(`${fate.job.name}|${fate.slot}|${shard}`);
          if (!event || event.at !== at) {
            violations.push({
              invariant: 'on-time',
              runKey: event?.runKey ?? `${fate.job.name}@${new Date(fate.slot).toISOString()}`,
              detail: event
                ? `on-time slot first seen by tick ${k} was created later, at ${new Date(event.at).toISOString()}`
                : `on-time slot first seen by tick ${k} was never created`,
            });
          }
        }
      }
      // ... and sent before every catch-up run of the tick.
      const order = (sentByTick.get(at) ?? []).map((e) => createdAt.get(e.runKey)).filter((e) => e !== undefined && e.at === at);
      const isCatchUp = (e: Extract<HistoryEvent, { type: 'run-created' }>) => e.slot < at - afterOf.get(e.job)!;
      const firstCatchUp = order.findIndex((e) => isCatchUp(e!));
      const lateOnTime = firstCatchUp < 0 ? -1 : order.slice(firstCatchUp).findIndex((e) => !isCatchUp(e!));
      if (lateOnTime >= 0) {
        violations.push({
          invariant: 'on-time',
          runKey: order[firstCatchUp + lateOnTime]!.runKey,
          detail: `tick ${k} sent this on-time run after a catch-up run`,
        });
      }
    }

    // Catch-up must end once the missed slots are planned.
    const last = behindAt[behindAt.length - 1]!;
    for (const plan of plans) {
      if (plan.policy === 'latest' || !last.behind.has(plan.name)) continue;
      violations.push({
        invariant: 'catch-up-terminates',
        runKey: plan.name,
        detail:
          `${plan.name} (policy ${plan.policy}, every ${plan.every / 1000} s, misfire.after ${plan.after / 1000} s, maxPerTick ${plan.maxPerTick}) ` +
          `still "behind" ${ticks.length - resumeTick - 1} ticks after resume although its ${missed.get(plan.name)} missed slots needed ${Math.floor(missed.get(plan.name)! / plan.maxPerTick) + 1}: ` +
          "the catch-up cursor re-walks slots already planned on time (planTick bounds catch-up by the current tick's misfire edge, not the one at resume)",
      });
    }

    const misfiredOracle = [...fates.values()].filter((f) => f.misfire).length;
    const misfiredMetric = world.metrics.get('SlotsMisfired');
    const observations: string[] = [];
    if (misfiredMetric > misfiredOracle) {
      observations.push(
        'SlotsMisfired counts already-planned slots again on every tick a job stays "behind" (metric above the true number of misfired slots)',
      );
    }
    return {
      runs: runs.length,
      faults: 1,
      check: result,
      violations,
      facts: {
        misfiredSlots: misfiredOracle,
        misfiredMetric,
        skippedRuns: runs.filter((r) => r.status === RunStatus.SKIPPED).length,
        catchUpTicks: ticks.length - resumeTick,
        maxTicksAfterResume: ticks.length - resumeTick,
      },
      observations,
    };
  } finally {
    await world.destroy();
  }
}
