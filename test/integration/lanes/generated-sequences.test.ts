/**
 * Generated sequences on three runs of one exclusive job (each overlap
 * policy): worker outcomes, worker deaths, operator repairs and sweeper ticks, with the queue
 * modelled as SQS behaves (a message acked is gone, one left for retry comes back, every message a
 * worker, the sweeper or an operator sends arrives). Then only SQS and the sweeper act: every run
 * must settle (DESIGN §11.6 and §11.8), and no write may be rejected as malformed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { type LedgerOps, needsRevival } from '../../../shared/store/repairs.js';
import { messageFor } from '../../../shared/core/run-message.js';
import { isTerminal, type RunMessage } from '../../../shared/core/vocabulary.js';
import { PermanentError, ReconcileOutcome, ResultUnknownError, RetryableError, type JobHandler } from '../../../shared/handler-api.js';
import { MetricName } from '../../../shared/runtime/observability.js';
import { runPlannerTick } from '../../../shared/planner/planner.js';
import { processRecord } from '../../../shared/worker/batch.js';
import { OpsFailure } from '../../../tools/ops/io.js';
import { laneHandOn } from '../../../shared/operations/resolve.js';
import { resolveRun } from '../../../tools/ops/resolve.js';
import { RETRYABLE_STATES, retryRuns } from '../../../shared/operations/retry.js';
import { FROZEN_TIMERS, silentLogger, testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { opsSandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const MAX_ATTEMPTS = 2;
const RUNS = 3;

type Behaviour = 'ok' | 'retryable' | 'permanent' | 'unknown' | 'hang';
type Step =
  | { readonly kind: 'deliver'; readonly run: number; readonly behaviour: Behaviour }
  | { readonly kind: 'die'; readonly run: number }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'retry'; readonly run: number }
  | { readonly kind: 'resolve'; readonly run: number; readonly as: 'succeeded' | 'dead'; readonly force: boolean }
  | { readonly kind: 'redrive'; readonly run: number }
  | { readonly kind: 'tick' };

const runIndex = fc.nat({ max: RUNS - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      run: runIndex,
      behaviour: fc.constantFrom<Behaviour>('ok', 'ok', 'retryable', 'permanent', 'unknown'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('die' as const), run: runIndex }) },
  { weight: 3, arbitrary: fc.constantFrom(1_000, 40_000, 3 * MIN).map((ms) => ({ kind: 'advance' as const, ms })) },
  // SEQUENCE_NO_REVIVE=1 leaves out the operator revivals.
  { weight: process.env.SEQUENCE_NO_REVIVE ? 0 : 2, arbitrary: fc.record({ kind: fc.constant('retry' as const), run: runIndex }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('resolve' as const),
      run: runIndex,
      as: fc.constantFrom('succeeded' as const, 'dead' as const),
      force: fc.boolean(),
    }),
  },
  { weight: process.env.SEQUENCE_NO_REVIVE ? 0 : 1, arbitrary: fc.record({ kind: fc.constant('redrive' as const), run: runIndex }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'tick' as const }) },
);
/** SEQUENCE_POLICIES=coalesce,replace narrows the policies (to drive one policy harder). */
const POLICIES = ['forbid-skip', 'forbid-queue', 'coalesce', 'replace'] as const;
const chosen = process.env.SEQUENCE_POLICIES?.split(',');
const policy = fc.constantFrom(...POLICIES.filter((p) => chosen === undefined || chosen.includes(p)));

describe('generated sequences on an exclusive lane', () => {
  let box: Sandbox;
  let ops: LedgerOps;
  beforeAll(async () => {
    ({ box, ops } = await opsSandbox());
  });
  afterAll(() => box.destroy());

  it('whatever the workers and operators did, once only SQS and the sweeper act every run of the lane settles', async () => {
    await fc.assert(
      fc.asyncProperty(policy, fc.array(step, { minLength: 1, maxLength: 14 }), async (overlap, steps) => {
        const name = `ls-${Math.random().toString(36).slice(2, 8)}`;
        const next: { behaviour: Behaviour; started?: () => void } = { behaviour: 'ok' };
        const handler: JobHandler = {
          async run() {
            const behaviour = next.behaviour;
            next.behaviour = 'ok';
            if (behaviour === 'hang') {
              next.started?.();
              // The worker's process froze or died here: this attempt never ends.
              await new Promise(() => undefined);
            }
            if (behaviour === 'retryable') throw new RetryableError('down', { code: 'DOWN' });
            if (behaviour === 'permanent') throw new PermanentError('bad', { code: 'BAD' });
            if (behaviour === 'unknown') throw new ResultUnknownError('sent, no answer', { code: 'SENT' });
          },
          reconcile: async () => ({ outcome: ReconcileOutcome.NOT_DONE }),
        };
        // A yearly schedule: the planner plans nothing here; it only sweeps (the runs are watched,
        // as catch-up, backfill and manual runs are).
        const jobs = testJobs(
          [
            {
              name,
              schedule: '0 0 1 1 *',
              handler: 'h',
              startLead: 0,
              lease: '30s',
              overlap,
              retry: { maxAttempts: MAX_ATTEMPTS, backoff: { base: '1s', max: '2s' } },
            },
          ],
          ['h'],
        );
        const now = Math.floor(Date.now() / MIN) * MIN;
        const lab = new Lab(box, jobs, { h: handler }, now);
        const slots = Array.from({ length: RUNS }, (_, i) => now - (RUNS - i) * MIN);
        const live: RunMessage[] = [];
        for (const slot of slots) {
          const run = await lab.create(name, slot, { watch: true });
          live.push(messageFor(run));
        }
        let seq = 0;
        const deliverMessage = async (message: RunMessage, owner: string): Promise<void> => {
          const id = `m${++seq}`;
          const outcome = await processRecord(lab.deps(owner), { messageId: id, receiptHandle: `r-${id}`, body: JSON.stringify(message) });
          if (outcome === 'retry') live.push(message);
        };
        const collectSent = () => live.push(...lab.queue.take().map((o) => o.message));
        const tick = () =>
          runPlannerTick(
            { ledger: box.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics },
            { partition: 0, of: 1 },
          );
        const trace: string[] = [`policy ${overlap}`];

        for (const [i, s] of steps.entries()) {
          trace.push(`step ${i} ${JSON.stringify(s)}`);
          const id = 'run' in s ? lab.id(name, slots[s.run]!) : undefined;
          switch (s.kind) {
            case 'deliver': {
              const at = live.findIndex((m) => m.slot === id!.slot);
              if (at < 0) break; // no message of that run is in the queue
              const [message] = live.splice(at, 1);
              next.behaviour = s.behaviour;
              await deliverMessage(message!, `w${i}`);
              next.behaviour = 'ok';
              break;
            }
            case 'die': {
              // A worker receives the run's message, starts the handler, and dies there (frozen: no
              // heartbeat, no outcome). The message comes back after its visibility timeout.
              const at = live.findIndex((m) => m.slot === id!.slot);
              if (at < 0) break;
              const [message] = live.splice(at, 1);
              const started = new Promise<void>((resolve) => (next.started = resolve));
              next.behaviour = 'hang';
              const mid = `m${++seq}`;
              const done = processRecord(lab.deps(`ghost${i}`, { timers: FROZEN_TIMERS }), {
                messageId: mid,
                receiptHandle: `r-${mid}`,
                body: JSON.stringify(message),
              });
              const first = await Promise.race([started.then(() => 'started' as const), done]);
              next.behaviour = 'ok';
              next.started = undefined;
              live.push(message!);
              if (first !== 'started' && first === 'ack') live.pop();
              break;
            }
            case 'advance':
              lab.clock.advance(s.ms);
              break;
            case 'retry':
              await retryRuns(
                { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
                lab.job(name),
                [(await lab.run(name, id!.slot))!],
                { states: RETRYABLE_STATES },
              );
              break;
            case 'resolve':
              try {
                await resolveRun(
                  { ledger: box.ledger, ops, clock: lab.clock.read, handOn: laneHandOn(box.ledger, lab.queue, jobs, lab.clock.read) },
                  { id: id!, as: s.as, reason: 'review', by: 'op', force: s.force },
                );
              } catch (error) {
                if (!(error instanceof OpsFailure)) throw error;
              }
              break;
            case 'redrive': {
              const run = (await lab.run(name, id!.slot))!;
              if (needsRevival(run, MAX_ATTEMPTS, lab.clock.now, ops.takeoverMarginMs)) {
                const revived = await ops.reviveRun(run, { now: lab.clock.now, by: 'op' });
                // redrive then moves the run's DLQ message back to the run queue.
                if (revived.ok) live.push(messageFor(revived.run));
              }
              break;
            }
            case 'tick':
              await tick();
              break;
          }
          collectSent();
        }
        // From here on only SQS redelivery and the sweeper act.
        const open = async () => {
          const runs = await Promise.all(slots.map((slot) => lab.run(name, slot)));
          return runs
            .filter((r) => r && !isTerminal(r.status))
            .map((r) => `${r!.runKey} ${r!.status} token ${r!.fencingToken} redispatches ${r!.redispatches ?? 0}`);
        };
        for (let round = 0; round < 20 && (await open()).length > 0; round++) {
          lab.clock.advance(3 * MIN);
          await tick();
          collectSent();
          const batch = live.splice(0);
          for (const message of batch) await deliverMessage(message, `drain${round}`);
          collectSent();
        }
        const problems: string[] = [];
        const stillOpen = await open();
        if (stillOpen.length > 0) {
          const marker = await box.ledger.lanes.read(name, 0);
          problems.push(
            `never settled: ${stillOpen.join('; ')}; lane marker ${marker?.holderSlot !== undefined ? new Date(marker.holderSlot).toISOString() : 'free'}; stuck ${lab.metrics.get(MetricName.RunsStuck)}`,
          );
        }
        if (lab.metrics.get(MetricName.WorkerRecordErrors) > 0) problems.push('a record failed');
        const malformed = lab.logs.filter((l) => JSON.stringify(l).includes('malformed'));
        if (malformed.length > 0) problems.push(`malformed writes: ${JSON.stringify(malformed[0])}`);
        expect(problems, trace.join('\n')).toEqual([]);
      }),
      { numRuns: Number(process.env.SEQUENCE_RUNS ?? 40), seed: Number(process.env.SEQUENCE_SEED ?? 20261201), endOnFailure: false },
    );
  });
});
