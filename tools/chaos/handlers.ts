/**
 * The handlers the drills run, in-process and in worker child processes alike.
 *
 * Every handler ends with one irreversible effect, a "charge" keyed by a business key (derived
 * from the run key), written through `ctx.fenced` onto the run's business item. The item keeps a
 * commit-ordered log of every write it accepted (token, run key, kind, business key), which the
 * checker reads back as the truth about fencing (§9.3) and irreversible effects (§9.4).
 *
 * Behaviour is chosen per run from the config and a hash of (seed, run key), so a drill can say
 * "40% of the runs hang after their charge" without the handler knowing which worker it is in.
 */
import type { HistoryEvent } from '../../shared/core/history.js';
import { sleep } from '../../shared/core/concurrency.js';
import {
  ConditionFailedError,
  FencedOutError,
  PermanentError,
  ReconcileOutcome,
  ResultUnknownError,
  RetryableError,
  type JobHandler,
  type RunContext,
} from '../../shared/handler-api.js';
import { unit } from './rng.js';

export const BUSINESS_SK = 'ACCOUNT';
export const businessPk = (runKey: string) => `BIZ#${runKey}`;
export const businessKeyOf = (runKey: string) => `charge:${runKey}`;
export const businessResource = (table: string, runKey: string) => `${table}/${businessPk(runKey)}/${BUSINESS_SK}`;

/** What handlers tell the drill besides history events. */
export type DrillNote =
  | { readonly note: 'started'; readonly runKey: string; readonly token: number; readonly at: number }
  /** The writer's first (fenced) step landed: the moment a pause drill pauses the worker. */
  | { readonly note: 'step'; readonly runKey: string; readonly token: number; readonly at: number }
  /** The charge landed and this run now hangs (a kill drill's victim). */
  | { readonly note: 'hang'; readonly runKey: string; readonly token: number; readonly at: number }
  | {
      readonly note: 'charged';
      readonly runKey: string;
      readonly token: number;
      readonly at: number;
      readonly result: 'accepted' | 'condition-failed' | 'fenced-out';
    }
  /** ctx.signal fired while the holder held the run. */
  | { readonly note: 'aborted'; readonly runKey: string; readonly token: number; readonly at: number }
  | { readonly note: 'reconcile'; readonly runKey: string; readonly token: number; readonly at: number; readonly outcome: string };

export interface HandlerHooks {
  record(event: HistoryEvent): void;
  note(note: DrillNote): void;
}

export type FailMode = 'retryable' | 'error' | 'permanent' | 'unknown' | 'timeout';

export interface HandlerConfig {
  readonly seed: number;
  /** Work before the charge, ms. @default [0, 20] */
  readonly workMs?: readonly [number, number];
  /** Fraction of runs that hang forever after their charge (kill-drill victims). @default 0 */
  readonly hangAfterCharge?: number;
  /** Charge under the business-key condition. @default true */
  readonly idempotent?: boolean;
  /** writer: time between the first step and the charge, ms; the writer ignores ctx.signal. @default [0, 0] */
  readonly stepGapMs?: readonly [number, number];
  /** holder: fraction of runs that hold (wait for abort or holdMs) before charging. @default 0 */
  readonly holdFraction?: number;
  /** holder: how long a holding run waits for its signal before charging anyway, ms. @default 10_000 */
  readonly holdMs?: number;
  /** failing: how the failing job fails. @default 'retryable' */
  readonly failMode?: FailMode;
}

function between(
  config: HandlerConfig,
  runKey: string,
  label: string,
  range: readonly [number, number] | undefined,
  fallback: readonly [number, number],
): number {
  const [min, max] = range ?? fallback;
  return Math.round(min + unit(config.seed, `${runKey}:${label}`) * (max - min));
}

/** The writer's gap between its step and its charge for `runKey`, ms (what the handler will sleep). */
export function stepGapOf(config: HandlerConfig, runKey: string): number {
  return between(config, runKey, 'gap', config.stepGapMs, [0, 0]);
}

const never = () => new Promise<never>(() => undefined);

/** The irreversible effect: append a charge to the run's business item, once per business key. */
export async function charge(ctx: RunContext, hooks: HandlerHooks, idempotent = true): Promise<'accepted' | 'condition-failed'> {
  const businessKey = businessKeyOf(ctx.runKey);
  const table = ctx.tables.ledger;
  const resource = businessResource(table, ctx.runKey);
  const entry = { token: ctx.fencingToken, runKey: ctx.runKey, kind: 'charge', businessKey };
  try {
    await ctx.fenced.update({
      table,
      key: { pk: businessPk(ctx.runKey), sk: BUSINESS_SK },
      set: {
        expression:
          '#log = list_append(if_not_exists(#log, :empty), :entry), #charged = list_append(if_not_exists(#charged, :empty), :keys)',
        names: { '#log': 'log', '#charged': 'charged' },
        values: { ':empty': [], ':entry': [entry], ':keys': [businessKey] },
      },
      condition: idempotent
        ? {
            expression: 'attribute_not_exists(#charged) OR NOT contains(#charged, :bk)',
            names: { '#charged': 'charged' },
            values: { ':bk': businessKey },
          }
        : undefined,
    });
  } catch (error) {
    if (error instanceof ConditionFailedError) {
      hooks.note({ note: 'charged', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now(), result: 'condition-failed' });
      return 'condition-failed';
    }
    if (error instanceof FencedOutError)
      hooks.note({ note: 'charged', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now(), result: 'fenced-out' });
    throw error;
  }
  hooks.record({ type: 'effect', at: ctx.now(), runKey: ctx.runKey, token: ctx.fencingToken, resource, result: 'accepted', businessKey });
  hooks.note({ note: 'charged', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now(), result: 'accepted' });
  return 'accepted';
}

/** A reversible, fenced step on the same item (the pause drill's first write). */
async function step(ctx: RunContext): Promise<void> {
  await ctx.fenced.update({
    table: ctx.tables.ledger,
    key: { pk: businessPk(ctx.runKey), sk: BUSINESS_SK },
    set: {
      expression: '#log = list_append(if_not_exists(#log, :empty), :entry), #step = :token',
      names: { '#log': 'log', '#step': 'step' },
      values: { ':empty': [], ':entry': [{ token: ctx.fencingToken, runKey: ctx.runKey, kind: 'step' }], ':token': ctx.fencingToken },
    },
  });
}

function reconciler(hooks: HandlerHooks): NonNullable<JobHandler['reconcile']> {
  return async (ctx) => {
    const item = await ctx.reader.get(ctx.tables.ledger, { pk: businessPk(ctx.runKey), sk: BUSINESS_SK });
    const charged = Array.isArray(item?.charged) && (item.charged as unknown[]).includes(businessKeyOf(ctx.runKey));
    hooks.note({
      note: 'reconcile',
      runKey: ctx.runKey,
      token: ctx.fencingToken,
      at: Date.now(),
      outcome: charged ? 'already-done' : 'not-done',
    });
    return charged ? { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { reconciled: true } } : { outcome: ReconcileOutcome.NOT_DONE };
  };
}

export function makeHandlers(config: HandlerConfig, hooks: HandlerHooks): Record<string, JobHandler> {
  const idempotent = config.idempotent ?? true;
  const reconcile = reconciler(hooks);
  return {
    /** Work a little, charge, and (for the chosen victims) hang forever after the charge. */
    charge: {
      async run(ctx) {
        hooks.note({ note: 'started', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now() });
        const work = between(config, ctx.runKey, 'work', config.workMs, [0, 20]);
        if (work > 0) await sleep(work, ctx.signal);
        const result = await charge(ctx, hooks, idempotent);
        if (result === 'accepted' && unit(config.seed, `${ctx.runKey}:hang`) < (config.hangAfterCharge ?? 0)) {
          hooks.note({ note: 'hang', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now() });
          await never();
        }
        return { evidence: { charge: result } };
      },
      reconcile,
    },
    /** Step, then (ignoring ctx.signal, like a process that was paused) charge after a gap. */
    writer: {
      async run(ctx) {
        await step(ctx);
        hooks.note({ note: 'step', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now() });
        const gap = stepGapOf(config, ctx.runKey);
        if (gap > 0) await sleep(gap);
        const result = await charge(ctx, hooks, idempotent);
        return { evidence: { charge: result } };
      },
      reconcile,
    },
    /** Hold the run (heartbeating) until ctx.signal fires or holdMs passes, then charge. */
    holder: {
      async run(ctx) {
        hooks.note({ note: 'started', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now() });
        if (unit(config.seed, `${ctx.runKey}:hold`) < (config.holdFraction ?? 0)) {
          try {
            await sleep(config.holdMs ?? 10_000, ctx.signal);
          } catch (error) {
            hooks.note({ note: 'aborted', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now() });
            throw error instanceof Error ? error : new Error('aborted by ctx.signal', { cause: error });
          }
        } else {
          const work = between(config, ctx.runKey, 'work', config.workMs, [0, 20]);
          if (work > 0) await sleep(work, ctx.signal);
        }
        const result = await charge(ctx, hooks, idempotent);
        return { evidence: { charge: result } };
      },
      reconcile,
    },
    /** Never succeeds. */
    failing: {
      async run(ctx) {
        switch (config.failMode ?? 'retryable') {
          case 'retryable':
            throw new RetryableError('downstream keeps failing', { code: 'ALWAYS_FAILS' });
          case 'error':
            throw new Error('unexpected crash in the handler');
          case 'permanent':
            throw new PermanentError('configuration is broken', { code: 'BROKEN' });
          case 'unknown':
            throw new ResultUnknownError('foreign call timed out', { code: 'FOREIGN_TIMEOUT' });
          case 'timeout':
            await sleep(ctx.job.timeout * 3);
            return;
        }
      },
      async reconcile(ctx) {
        hooks.note({ note: 'reconcile', runKey: ctx.runKey, token: ctx.fencingToken, at: Date.now(), outcome: 'still-unknown' });
        return { outcome: ReconcileOutcome.STILL_UNKNOWN, reason: 'the foreign system does not answer' };
      },
    },
  };
}

export const HANDLER_NAMES = ['charge', 'writer', 'holder', 'failing'] as const;
