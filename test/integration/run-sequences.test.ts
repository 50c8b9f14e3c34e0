/**
 * Generated sequences of worker outcomes, worker deaths, clock moves and
 * operator repairs (retry, resolve, redrive's revival) on one run, checked after every step for
 * the item shapes later transitions rely on, and at the end for liveness (the run settles) and for
 * the reconcile promise (a run whose last result is unknown never runs again unreconciled).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { type LedgerOps, needsRevival } from '../../shared/store/repairs.js';
import { isTerminal, RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, ReconcileOutcome, ResultUnknownError, RetryableError, type JobHandler } from '../../shared/handler-api.js';
import { MetricName } from '../../shared/runtime/observability.js';
import { OpsFailure } from '../../tools/ops/io.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { RETRYABLE_STATES, retryRuns } from '../../shared/operations/retry.js';
import { testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { opsSandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const MAX_ATTEMPTS = 3;

type Behaviour = 'ok' | 'retryable' | 'permanent' | 'unknown' | 'yield';
type Step =
  | { readonly kind: 'deliver'; readonly behaviour: Behaviour }
  | { readonly kind: 'die' }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'retry' }
  | { readonly kind: 'resolve'; readonly as: 'succeeded' | 'dead'; readonly force: boolean }
  | { readonly kind: 'redrive' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .constantFrom<Behaviour>('ok', 'retryable', 'retryable', 'permanent', 'unknown', 'unknown', 'yield')
      .map((behaviour) => ({ kind: 'deliver' as const, behaviour })),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'die' as const }) },
  { weight: 3, arbitrary: fc.constantFrom(1_000, 5_000, 40_000, 2 * MIN, 10 * MIN).map((ms) => ({ kind: 'advance' as const, ms })) },
  { weight: 2, arbitrary: fc.constant({ kind: 'retry' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('resolve' as const),
      as: fc.constantFrom('succeeded' as const, 'dead' as const),
      force: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'redrive' as const }) },
);

describe('generated operator and worker sequences on one run', () => {
  let box: Sandbox;
  let ops: LedgerOps;
  beforeAll(async () => {
    ({ box, ops } = await opsSandbox());
  });
  afterAll(() => box.destroy());

  it('every step leaves a well-formed item, the run always settles, and an unknown result is reconciled before the handler runs again', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const name = `sq-${Math.random().toString(36).slice(2, 8)}`;
        const model = { unknown: false, reconciled: false, behaviour: 'ok' as Behaviour };
        const problems: string[] = [];
        const handler: JobHandler = {
          async run(ctx) {
            if (model.unknown && !model.reconciled)
              problems.push(`handler ran again (attempt ${ctx.attempt}) after an unknown result, without reconcile`);
            const behaviour = model.behaviour;
            model.behaviour = 'ok';
            switch (behaviour) {
              case 'ok':
                model.unknown = false;
                return;
              case 'retryable':
                model.unknown = false;
                throw new RetryableError('down', { code: 'DOWN' });
              case 'permanent':
                model.unknown = false;
                throw new PermanentError('bad', { code: 'BAD' });
              case 'unknown':
                model.unknown = true;
                model.reconciled = false;
                throw new ResultUnknownError('timed out after sending', { code: 'SENT' });
              case 'yield':
                model.unknown = false;
                await ctx.checkpoint({ at: ctx.attempt });
                await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
                return;
            }
          },
          async reconcile() {
            model.reconciled = true;
            model.unknown = false;
            return { outcome: ReconcileOutcome.NOT_DONE };
          },
        };
        const jobs = testJobs(
          [
            {
              name,
              schedule: '* * * * *',
              handler: 'h',
              startLead: 0,
              lease: '30s',
              retry: { maxAttempts: MAX_ATTEMPTS, backoff: { base: '1s', max: '4s' } },
            },
          ],
          ['h'],
        );
        const now = Math.floor(Date.now() / MIN) * MIN;
        const lab = new Lab(box, jobs, { h: handler }, now);
        const slot = now - MIN;
        const id = lab.id(name, slot);
        await lab.create(name, slot);
        const trace: string[] = [];

        const checkShape = async (where: string) => {
          const item = await ops.getRunItem(id);
          if (!item) return problems.push(`${where}: run item vanished`);
          const status = item.status as RunStatus;
          if (!isTerminal(status) && item.expiresAt !== undefined)
            problems.push(`${where}: open ${status} run carries expiresAt (TTL would delete it)`);
          if (!isTerminal(status) && item.attempts === undefined)
            problems.push(`${where}: open ${status} run has no attempts map (every outcome write fails)`);
          if (status === RunStatus.RUNNING && (item.owner === undefined || item.leaseUntil === undefined))
            problems.push(`${where}: RUNNING without owner or lease`);
          if (status !== RunStatus.RUNNING && item.leaseUntil !== undefined) problems.push(`${where}: ${status} run keeps leaseUntil`);
          if (isTerminal(status) && item.nextAttemptAt !== undefined) problems.push(`${where}: ${status} run keeps nextAttemptAt`);
          return undefined;
        };

        for (const [i, s] of steps.entries()) {
          const where = `step ${i} ${JSON.stringify(s)}`;
          trace.push(where);
          switch (s.kind) {
            case 'deliver':
              model.behaviour = s.behaviour;
              await lab.deliver(name, slot, `w${i}`, s.behaviour === 'yield' ? { remainingTimeMs: () => 5_000 } : {});
              model.behaviour = 'ok';
              break;
            case 'die': {
              // A worker claims, may have had its effect, and vanishes without an outcome.
              const claim = await box.ledger.claim(id, `ghost${i}`, lab.clock.now, 30_000, 2_000);
              if (claim.kind === 'claimed') {
                model.unknown = true;
                model.reconciled = false;
              }
              break;
            }
            case 'advance':
              lab.clock.advance(s.ms);
              break;
            case 'retry': {
              const run = (await lab.run(name, slot))!;
              await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [run], {
                states: RETRYABLE_STATES,
              });
              break;
            }
            case 'resolve':
              try {
                await resolveRun(
                  { ledger: box.ledger, ops, clock: lab.clock.read },
                  { id, as: s.as, reason: 'review', by: 'op', force: s.force },
                );
                // Resolving a RUNNING run dead keeps its result unknown (revival-edges.test.ts): a later
                // retry must reconcile, so the model's unknown flag stays as it was.
              } catch (error) {
                if (!(error instanceof OpsFailure)) throw error;
              }
              break;
            case 'redrive': {
              // What `ops redrive` does for a DLQ message of this run (tools/ops/redrive.ts decide()).
              const run = (await lab.run(name, slot))!;
              if (needsRevival(run, MAX_ATTEMPTS, lab.clock.now, ops.takeoverMarginMs))
                await ops.reviveRun(run, { now: lab.clock.now, by: 'op' });
              break;
            }
          }
          // Messages the operator paths sent arrive as 'deliver' steps; drop the copies.
          lab.queue.take();
          await checkShape(where);
        }
        // Liveness: from here on only SQS redelivery (and the sweeper) act; the run settles.
        for (let round = 0; round < 12 && !isTerminal((await lab.status(name, slot))!); round++) {
          lab.clock.advance(10 * MIN);
          await lab.deliver(name, slot, `drain${round}`);
          await checkShape(`drain ${round}`);
        }
        const final = (await lab.run(name, slot))!;
        if (!isTerminal(final.status)) problems.push(`never settled: ${final.status} token ${final.fencingToken}`);
        if (lab.metrics.get(MetricName.WorkerRecordErrors) > 0) problems.push('a record failed');
        const malformed = lab.logs.filter((l) => String(l.message ?? l.msg ?? '').includes('malformed'));
        if (malformed.length > 0) problems.push(`malformed writes: ${JSON.stringify(malformed[0])}`);
        expect(problems, trace.join('\n')).toEqual([]);
      }),
      { numRuns: Number(process.env.SEQUENCE_RUNS ?? 40), seed: Number(process.env.SEQUENCE_SEED ?? 20261201), endOnFailure: false },
    );
  });
});
