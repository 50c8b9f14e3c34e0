/**
 * Drill (a): the connection drops after a run's PutItem committed but before its response came
 * back. SDK middleware on the planner's own DynamoDB client lets the put reach DynamoDB Local,
 * then throws a network-like TimeoutError once for that item. Either the SDK retries (the retry
 * hits the conditional check and the adapter returns the existing run) or, with SDK retries off,
 * the tick fails and the next invocation re-plans. Concurrent planners run some ticks.
 *
 * Must hold: no second run for any slot, no lost slot (every planned slot SUCCEEDED), the checker's
 * five invariants. Facts: `orphansAfterSdkRetry` counts runs whose put the SDK retried and which
 * the planner then did not send (createRun must recognise its own committed put: 0 expected);
 * `orphans` counts every run the planner never sent (those of ticks that failed outright), all of
 * which the sweeper must dispatch, a grace period late.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Ledger } from '../../../shared/store/ledger.js';
import type { HistoryEvent } from '../../../shared/core/history.js';
import { RunStatus, type Run } from '../../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { localClientConfig } from '../../local-stack.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation } from '../drill.js';
import type { Rng } from '../rng.js';
import { World } from '../world.js';

const SCHEDULES = [
  { cron: '*/10 * * * * *', every: 10_000 },
  { cron: '*/15 * * * * *', every: 15_000 },
  { cron: '*/20 * * * * *', every: 20_000 },
  { cron: '*/30 * * * * *', every: 30_000 },
  { cron: '* * * * *', every: 60_000 },
] as const;
const LOOKAHEAD = 60_000;
const SWEEP_GRACE = 120_000;

export interface DropCounters {
  faults: number;
  retriedPuts: number;
  /** `pk|sk` of every put whose response was dropped, and of those the SDK then retried. */
  readonly faulted?: Set<string>;
  readonly retried?: Set<string>;
}

/** Makes `client` drop the response of the first attempt of some run puts, after they committed. */
export function dropPutResponses(client: DynamoDBClient, table: string, shouldDrop: () => boolean, counters: DropCounters): void {
  const seen = new Set<string>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string; Item?: Record<string, { S?: string }> };
      const sk = input.Item?.sk?.S;
      const isRunPut =
        context.commandName === 'PutItemCommand' &&
        input.TableName === table &&
        input.ConditionExpression === 'attribute_not_exists(pk)' &&
        typeof sk === 'string' &&
        sk.startsWith('RUN#');
      if (!isRunPut) return next(args);
      const key = `${input.Item?.pk?.S}|${sk}`;
      const first = !seen.has(key);
      seen.add(key);
      if (!first) {
        counters.retriedPuts++;
        counters.retried?.add(key);
      }
      const result = await next(args);
      const status = (result.response as { statusCode?: number } | undefined)?.statusCode;
      if (first && status === 200 && shouldDrop()) {
        counters.faults++;
        counters.faulted?.add(key);
        // The item is written; the caller only sees the connection go away.
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
      }
      return result;
    },
    { step: 'deserialize', name: 'chaosDropPutResponse' },
  );
}

function faultyLedger(world: World, rng: Rng, probability: number, sdkRetries: boolean, counters: DropCounters) {
  const client = new DynamoDBClient({ ...localClientConfig(world.endpoints.dynamoEndpoint), maxAttempts: sdkRetries ? 3 : 1 });
  dropPutResponses(client, world.endpoints.ledgerTable, () => rng.chance(probability), counters);
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return { ledger: new Ledger(doc, { tableName: world.endpoints.ledgerTable }), destroy: () => client.destroy() };
}

export const putDroppedDrill: Drill = (options) =>
  iterate('put-dropped', options, async ({ rng, index, budget, seed }) => {
    const trace = tracer(`put-dropped #${index}`, options.log);
    const world = await World.create(options.base, { visibilityTimeoutSeconds: 60 }, options.log);
    try {
      const prefix = `a${index}-${rng.int(0, 46_655).toString(36)}`;
      const picked = Array.from({ length: rng.int(2, 5) }, (_, i) => ({
        i,
        schedule: rng.pick(SCHEDULES),
        shards: rng.chance(0.3) ? rng.int(2, 3) : 1,
      }));
      world.setJobs(
        picked.map((p) => ({ name: `${prefix}-${p.i}`, schedule: p.schedule.cron, handler: 'charge', shards: p.shards, startLead: '15m' })),
      );
      const perTick = picked.reduce((n, p) => n + (p.shards * LOOKAHEAD) / p.schedule.every, 0);
      const target = Math.max(20, Math.min(budget, rng.int(150, 400)));
      const regularTicks = Math.max(1, Math.min(10, Math.ceil(target / perTick) - 4));
      const probability = rng.pick([0.1, 0.25, 0.5]);

      let now = Date.UTC(2031, 0, 1) + index * 86_400_000 + rng.int(0, 59_999);
      const clock = () => now;
      const lanes = [0, 1, 2, 3, 4].map((i) =>
        world.workerDeps({ owner: `${prefix}-w${i}`, clock, handlerConfig: { seed, workMs: [0, 0] } }),
      );
      const counters: DropCounters = { faults: 0, retriedPuts: 0, faulted: new Set(), retried: new Set() };
      const plannerOptions = { lookaheadMs: LOOKAHEAD, sweepGraceMs: SWEEP_GRACE };
      const tickTimes: number[] = [];
      let tickFailures = 0;

      for (let k = 0; k < regularTicks; k++) {
        // A failed tick is retried by the next invocation (EventBridge retries, or the next minute).
        for (let attempt = 0; ; attempt++) {
          const sdkRetries = attempt > 0 || rng.chance(0.7);
          const faulty = faultyLedger(world, rng, probability, sdkRetries, counters);
          try {
            const concurrent = rng.chance(0.3);
            await Promise.all([
              world.tick(clock, plannerOptions, faulty.ledger),
              concurrent ? world.tick(clock, plannerOptions) : undefined,
            ]);
            tickTimes.push(now);
            trace(`tick ${k}`);
            break;
          } catch (error) {
            tickFailures++;
            if (attempt >= 4) throw error;
          } finally {
            faulty.destroy();
          }
        }
        now += LOOKAHEAD + rng.int(-2_000, 2_000);
        await world.drain(lanes);
        trace(`drain ${k}`);
      }

      // Give the sweeper its grace period, then tick (fault-free) until nothing is left open.
      now += SWEEP_GRACE + rng.int(1_000, 30_000);
      for (let sweeps = 0; sweeps < 10; sweeps++) {
        await world.tick(clock, plannerOptions);
        tickTimes.push(now);
        trace(`sweep tick ${sweeps}`);
        now += LOOKAHEAD + 1_000;
        await world.drain(lanes);
        trace(`sweep drain ${sweeps}`);
        const open = (await world.ledger.listOpenRuns(now + LOOKAHEAD, 1_000)).filter((r) => r.job.startsWith(prefix));
        if (open.length === 0) break;
      }

      // Oracle: every slot in (first tick, last tick + lookahead] of every job, each shard, SUCCEEDED.
      const first = tickTimes[0]!;
      const last = tickTimes[tickTimes.length - 1]! + LOOKAHEAD;
      const slots = world.jobs.flatMap((job, i) => {
        const every = picked[i]!.schedule.every;
        const out = [];
        for (let slot = Math.floor(first / every) * every + every; slot <= last; slot += every) {
          if (slot <= first) continue;
          for (let shard = 0; shard < job.shards; shard++)
            out.push({ job: job.name, slot, shard, shards: job.shards, statuses: [RunStatus.SUCCEEDED] });
        }
        return out;
      });
      const { result, runs } = await world.check({ slots });
      trace('check');
      const violations: DrillViolation[] = invariantViolations(result);
      const expectedKeys = new Set(slots.map((s) => `${s.job}|${s.slot}|${s.shard}`));
      for (const run of runs) {
        if (!expectedKeys.has(`${run.job}|${run.slot}|${run.shard}`)) {
          violations.push({ invariant: 'one-run-per-slot', runKey: run.runKey, detail: 'a run item exists for a slot no tick planned' });
        }
      }

      const facts = orphanFacts(world.events, runs);
      // Orphans whose own put was dropped and retried by the SDK within a tick that succeeded: the
      // case createRun can recognise (its creator nonce); the others come from ticks that failed.
      const planned = new Set(world.events.filter((e) => e.type === 'message-sent' && e.reason === 'planned').map((e) => e.runKey));
      const sdkRetryOrphans = runs.filter(
        (r) => !planned.has(r.runKey) && counters.retried!.has(`JOB#${r.job}|${LedgerKeys.runSk(r.slot, r.shard)}`),
      ).length;
      if (counters.faults > 0 && counters.retriedPuts === 0 && tickFailures === 0) {
        violations.push({
          invariant: 'drill-setup',
          runKey: '-',
          detail: `faults were injected but no put was retried (the SDK retry did not happen)`,
        });
      }
      const observations: string[] = [];
      if (sdkRetryOrphans > 0) {
        observations.push(
          'a run whose PutItem response was lost is not sent by the planner that created it: the retry sees ConditionalCheckFailed, ' +
            'createRun returns {created:false}, so the run waits READY until the sweeper re-dispatches it after sweepGraceMs (slot started late)',
        );
      }
      if (facts.orphans > sdkRetryOrphans) {
        observations.push(
          "runs created by a planner tick that then failed are not sent by the next tick (they already exist and are not its own): they wait for the sweeper's grace period",
        );
      }
      if (facts.orphansLost > 0) observations.push('some orphaned runs were never dispatched by the sweeper (see no-lost-slot violations)');
      return {
        runs: runs.length,
        faults: counters.faults,
        check: result,
        violations,
        facts: {
          ...facts,
          orphansAfterSdkRetry: sdkRetryOrphans,
          putsRetried: counters.retriedPuts,
          tickFailures,
          faultedPuts: counters.faults,
        },
        observations,
      };
    } finally {
      await world.destroy();
    }
  });

/** Runs the planner never sent (no `message-sent planned`), how the sweeper recovered them and how late they started. */
function orphanFacts(events: readonly HistoryEvent[], runs: readonly Run[]) {
  const planned = new Set<string>();
  const swept = new Set<string>();
  const started = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'message-sent') (e.reason === 'planned' ? planned : swept).add(e.runKey);
    if (e.type === 'handler-started' && !started.has(e.runKey)) started.set(e.runKey, e.at);
  }
  let orphans = 0;
  let orphansSwept = 0;
  let orphansLost = 0;
  let maxOrphanDelayMs = 0;
  for (const run of runs) {
    if (planned.has(run.runKey)) continue;
    const at = started.get(run.runKey);
    const delay = at === undefined ? 0 : at - run.slot;
    orphans++;
    if (swept.has(run.runKey)) orphansSwept++;
    if (run.status !== RunStatus.SUCCEEDED) orphansLost++;
    maxOrphanDelayMs = Math.max(maxOrphanDelayMs, delay);
  }
  return { orphans, orphansSwept, orphansLost, maxOrphanDelayMs };
}
