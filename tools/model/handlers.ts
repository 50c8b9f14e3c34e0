/**
 * Model handlers: what a job's handler does on each execution is scripted by the generator (a
 * list of behaviours per job, taken in execution order), and every blocking step waits on the
 * invocation's virtual timers, so the scenario decides when it ends.
 *
 * Jobs write fenced business items shared per item group and shard (several jobs may write the
 * same items): counters (`n = n + 1`, each increment logged with a write id, so an increment
 * applied twice shows), and one irreversible "charge" per run, guarded by its business key and
 * reported with it. Zombies ignore ctx.signal and keep writing after their attempt ended.
 * Every end is reported as `handler-finished`, every reconcile as `reconciled`.
 */
import { sleep, type Timers } from '../../shared/core/concurrency.js';
import type { HandlerResult, HistorySink } from '../../shared/core/history.js';
import {
  AttemptEndedError,
  ConditionFailedError,
  FencedOutError,
  PermanentError,
  ReconcileOutcome,
  ResultUnknownError,
  RetryableError,
  type JobHandler,
  type RunContext,
} from '../../shared/handler-api.js';

export const BehaviourKind = {
  OK: 'ok',
  RETRYABLE: 'retryable',
  PERMANENT: 'permanent',
  UNKNOWN: 'unknown',
  CRASH: 'crash',
  TIMEOUT: 'timeout',
  YIELD: 'yield',
  HANG: 'hang',
  ZOMBIE: 'zombie',
  /**
   * A long job's run (JobSpec.longRun): `writes` invocations in all, each one increment and one
   * checkpoint of progress, then work until the invocation's time runs low (the worker yields);
   * the last one charges and succeeds.
   */
  LONG: 'long',
} as const;
export type BehaviourKind = (typeof BehaviourKind)[keyof typeof BehaviourKind];

export interface Behaviour {
  readonly kind: BehaviourKind;
  /** Virtual work time, ms, spread over the steps. */
  readonly workMs: number;
  /** Fenced increments before the end. */
  readonly writes: number;
}

export const MODEL_HANDLER = 'model';
export const MODEL_RECONCILING_HANDLER = 'model-reconciling';
export const MODEL_HANDLER_NAMES = [MODEL_HANDLER, MODEL_RECONCILING_HANDLER] as const;

export const ITEM_SK = 'STATE';
export const itemPk = (group: string, shard: number) => `ITEM#${group}#${shard}`;
export const chargeKey = (runKey: string) => `charge:${runKey}`;

export interface HandlerWorld {
  /** The next behaviour of a job (its script, cycled in execution order). */
  behaviourFor(job: string): Behaviour;
  groupOf(job: string): string;
  readonly history: HistorySink;
  /** True virtual time, for the events the handlers report. */
  now(): number;
}

const FOREVER = 10 * 365 * 86_400_000;

async function increment(ctx: RunContext, group: string, step: number): Promise<void> {
  await ctx.fenced.update({
    table: ctx.tables.payments,
    key: { pk: itemPk(group, ctx.shard), sk: ITEM_SK },
    set: {
      expression: 'n = if_not_exists(n, :zero) + :one, #log = list_append(if_not_exists(#log, :empty), :entry)',
      names: { '#log': 'log' },
      values: {
        ':zero': 0,
        ':one': 1,
        ':empty': [],
        ':entry': [{ token: ctx.fencingToken, runKey: ctx.runKey, kind: 'inc', writeId: `${ctx.runKey}|${ctx.fencingToken}|${step}` }],
      },
    },
  });
}

/**
 * The irreversible effect: once per run key, whatever the attempt. As the handler contract asks
 * (README, "Writing handlers"), a failure of the call that may have committed it (a lost
 * response the SDK gave up on, say) is thrown as ResultUnknownError, not as a retryable error:
 * the next attempt reconciles. A fence refusal or an ended attempt is the scheduler's to judge.
 */
async function charge(ctx: RunContext, world: HandlerWorld, group: string, tried: { charge: boolean }): Promise<'charged' | 'already'> {
  const businessKey = chargeKey(ctx.runKey);
  tried.charge = true;
  try {
    await ctx.fenced.update({
      table: ctx.tables.payments,
      key: { pk: itemPk(group, ctx.shard), sk: ITEM_SK },
      set: {
        expression:
          '#charged = list_append(if_not_exists(#charged, :empty), :keys), #log = list_append(if_not_exists(#log, :empty), :entry)',
        names: { '#charged': 'charged', '#log': 'log' },
        values: {
          ':empty': [],
          ':keys': [businessKey],
          ':entry': [{ token: ctx.fencingToken, runKey: ctx.runKey, kind: 'charge', businessKey }],
        },
      },
      condition: {
        expression: 'attribute_not_exists(#charged) OR NOT contains(#charged, :bk)',
        names: { '#charged': 'charged' },
        values: { ':bk': businessKey },
      },
    });
  } catch (error) {
    if (error instanceof ConditionFailedError) return 'already';
    if (error instanceof FencedOutError || error instanceof AttemptEndedError) throw error;
    throw new ResultUnknownError('model: the charge call failed after it may have committed', {
      code: 'MODEL_CHARGE_UNKNOWN',
      cause: error,
    });
  }
  world.history.record({
    type: 'effect',
    at: world.now(),
    runKey: ctx.runKey,
    token: ctx.fencingToken,
    resource: `${ctx.tables.payments}/${itemPk(group, ctx.shard)}/${ITEM_SK}`,
    result: 'accepted',
    businessKey,
  });
  return 'charged';
}

function resultOf(error: unknown, charged: boolean, chargeTried: boolean): HandlerResult {
  if (error instanceof RetryableError) return 'retryable';
  if (error instanceof PermanentError) return 'permanent';
  if (error instanceof ResultUnknownError) return 'unknown';
  if (charged) return 'unknown';
  if (error instanceof Error && error.name === 'Error' && !/fenced out|lease lost|aborted/i.test(error.message)) return 'retryable';
  // Stopped by the scheduler (fence, lease, signal) or by a failed call: before the charge was
  // sent nothing of the run's effect happened; after, it may have.
  return chargeTried ? 'aborted' : 'stopped';
}

/** The handlers of one worker invocation: their waits run on that invocation's timers. */
export function modelHandlers(world: HandlerWorld, owner: string, timers: Timers): Record<string, JobHandler> {
  const run = async (ctx: RunContext) => {
    const behaviour = world.behaviourFor(ctx.job.name);
    const group = world.groupOf(ctx.job.name);
    const zombie = behaviour.kind === BehaviourKind.ZOMBIE || behaviour.kind === BehaviourKind.TIMEOUT;
    const signal = zombie ? undefined : ctx.signal;
    const slice = behaviour.workMs / (behaviour.writes + 1);
    let charged = false;
    const tried = { charge: false };
    // Every end of the attempt, returned or thrown, is reported once, when it happens.
    const finished = (result: HandlerResult) =>
      world.history.record({ type: 'handler-finished', at: world.now(), runKey: ctx.runKey, owner, token: ctx.fencingToken, result });
    try {
      if (behaviour.kind === BehaviourKind.LONG) {
        const done = (typeof ctx.resumeFrom === 'number' ? ctx.resumeFrom : 0) + 1;
        await increment(ctx, group, done);
        await ctx.checkpoint(done);
        if (done < behaviour.writes) await sleep(FOREVER, ctx.signal, timers);
        charged = (await charge(ctx, world, group, tried)) === 'charged';
        finished('succeeded');
        return { evidence: { charged, invocations: done } };
      }
      for (let step = 0; step < behaviour.writes; step++) {
        await sleep(slice, signal, timers);
        await increment(ctx, group, step);
        if (behaviour.kind === BehaviourKind.YIELD) await ctx.checkpoint({ step });
      }
      await sleep(slice, signal, timers);
      switch (behaviour.kind) {
        case BehaviourKind.RETRYABLE:
          throw new RetryableError('model: downstream unavailable', { code: 'MODEL_RETRYABLE' });
        case BehaviourKind.PERMANENT:
          throw new PermanentError('model: bad input', { code: 'MODEL_PERMANENT' });
        case BehaviourKind.CRASH:
          throw new Error('model: unexpected crash');
        case BehaviourKind.UNKNOWN:
          charged = (await charge(ctx, world, group, tried)) === 'charged';
          throw new ResultUnknownError('model: foreign call timed out', { code: 'MODEL_UNKNOWN' });
        case BehaviourKind.TIMEOUT:
          // Outlives its attempt's timeout, then writes as if nothing happened.
          await sleep(ctx.job.timeout + 1_000, undefined, timers);
          break;
        case BehaviourKind.YIELD:
          // Runs until the invocation's time runs low; the worker yields through ctx.signal.
          await sleep(FOREVER, ctx.signal, timers);
          break;
        case BehaviourKind.HANG:
          await sleep(FOREVER, ctx.signal, timers);
          break;
        case BehaviourKind.ZOMBIE:
          // Ignores ctx.signal: keeps writing for a while whatever happened to its lease.
          await sleep(ctx.job.lease * 2, undefined, timers);
          await increment(ctx, group, behaviour.writes);
          break;
        case BehaviourKind.OK:
          break;
      }
      charged = (await charge(ctx, world, group, tried)) === 'charged' || charged;
      finished('succeeded');
      return { evidence: { charged } };
    } catch (error) {
      finished(resultOf(error, charged, tried.charge));
      throw error;
    }
  };
  const reconcile: JobHandler['reconcile'] = async (ctx) => {
    const group = world.groupOf(ctx.job.name);
    const item = await ctx.reader.get(ctx.tables.payments, { pk: itemPk(group, ctx.shard), sk: ITEM_SK });
    const done = Array.isArray(item?.charged) && (item.charged as unknown[]).includes(chargeKey(ctx.runKey));
    world.history.record({
      type: 'reconciled',
      at: world.now(),
      runKey: ctx.runKey,
      owner,
      token: ctx.fencingToken,
      outcome: done ? 'already-done' : 'not-done',
    });
    return done ? { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { reconciled: true } } : { outcome: ReconcileOutcome.NOT_DONE };
  };
  return {
    [MODEL_HANDLER]: { run },
    [MODEL_RECONCILING_HANDLER]: { run, reconcile },
  };
}
