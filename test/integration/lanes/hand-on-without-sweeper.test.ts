/**
 * The lane's hand-on alone drains a queue (DESIGN §8 "Lanes", §11): a holder that ends looks for
 * the next run of its lane, whose open item says it waits. Generated here: how many runs are due
 * together, which of their messages arrive in which concurrent waves (duplicates too), which
 * attempts fail once, and how long each handler takes, with real concurrency against DynamoDB
 * Local (a waiter races the holder's release, copies of one run race each other). No sweeper ever
 * runs: every run must still settle, the lane run one handler at a time, forbid-queue in slot
 * order. A waiter the holder's look missed stays READY with no message left, and fails the property.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { messageFor } from '../../../shared/core/run-message.js';
import { isTerminal, RunStatus, type RunMessage } from '../../../shared/core/vocabulary.js';
import { RetryableError, type JobHandler } from '../../../shared/handler-api.js';
import { MetricName } from '../../../shared/runtime/observability.js';
import { processRecord } from '../../../shared/worker/batch.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const MAX_RUNS = 5;

interface Plan {
  readonly overlap: 'forbid-queue' | 'coalesce';
  readonly runs: number;
  /**
   * Per run: its handler's time (ms), whether its first attempt fails (retryable), and how many
   * later slots fall due while it runs (the clock moves past them).
   */
  readonly handlers: readonly { readonly ms: number; readonly failsOnce: boolean; readonly long: number }[];
  /** Waves of first deliveries: run indexes, each delivered after its stagger (ms), concurrently (a run may recur: a duplicate). */
  readonly waves: readonly (readonly { readonly run: number; readonly after: number }[])[];
}

const plan: fc.Arbitrary<Plan> = fc
  .record({
    overlap: fc.constantFrom('forbid-queue' as const, 'coalesce' as const),
    runs: fc.integer({ min: 2, max: MAX_RUNS }),
    handlers: fc.array(
      fc.record({
        ms: fc.constantFrom(0, 2, 10, 40),
        failsOnce: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
        long: fc.nat({ max: 3 }),
      }),
      { minLength: MAX_RUNS, maxLength: MAX_RUNS },
    ),
    waves: fc.array(
      fc.array(fc.record({ run: fc.nat({ max: MAX_RUNS - 1 }), after: fc.constantFrom(0, 0, 5, 20) }), { minLength: 1, maxLength: 5 }),
      { minLength: 1, maxLength: 5 },
    ),
  })
  .map((p) => ({ ...p, waves: p.waves.map((w) => w.filter((d) => d.run < p.runs)).filter((w) => w.length > 0) }));

describe('lane hand-on without the sweeper', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('whatever order and concurrency the messages of a queued lane arrive in, the hand-on alone settles every run: one handler at a time, forbid-queue in slot order', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async ({ overlap, runs, handlers, waves }) => {
        const name = uniqueName(`ho-${overlap}`);
        const base = Math.floor(Date.now() / MIN) * MIN - 10 * MIN;
        const slots = Array.from({ length: runs }, (_, i) => base + i * MIN);
        const failed = new Set<number>();
        const started: number[] = [];
        let active = 0;
        let overlapped = 0;
        const jobs = testJobs(
          [
            {
              name,
              schedule: '* * * * *',
              handler: 'h',
              startLead: 0,
              lease: '10m',
              overlap,
              retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } },
            },
          ],
          ['h'],
        );
        // Only the first slot is due at first. The lease outlasts every clock move a long handler makes
        // (a lease that ran out would rightly let a duplicate take the run over, beside its fenced holder).
        const lab = new Lab(box, jobs, {}, base + 10);
        const handler: JobHandler = {
          async run(ctx) {
            const i = slots.indexOf(ctx.slot);
            started.push(ctx.slot);
            active++;
            if (active > 1) overlapped++;
            try {
              const dueMeanwhile = Math.min(i + handlers[i]!.long, runs - 1);
              lab.clock.now = Math.max(lab.clock.now, slots[dueMeanwhile]! + 10);
              await new Promise((resolve) => setTimeout(resolve, handlers[i]!.ms));
              if (handlers[i]!.failsOnce && !failed.has(i)) {
                failed.add(i);
                throw new RetryableError('downstream busy', { code: 'BUSY' });
              }
            } finally {
              active--;
            }
          },
        };
        lab.handlers.h = handler;
        // Every run was planned with a message, delayed to its slot: SQS hands none over earlier.
        const pending: RunMessage[] = [];
        const messages: RunMessage[] = [];
        for (const slot of slots) messages.push(messageFor(await lab.create(name, slot)));
        let seq = 0;
        const deliver = async (message: RunMessage): Promise<void> => {
          if (message.slot > lab.clock.now) return void pending.push(message);
          const id = `m${++seq}`;
          if (
            (await processRecord(lab.deps(`w${seq}`), { messageId: id, receiptHandle: `r-${id}`, body: JSON.stringify(message) })) ===
            'retry'
          )
            pending.push(message);
        };
        const trace: string[] = [`${overlap}, ${runs} runs, handlers ${JSON.stringify(handlers.slice(0, runs))}`];
        const firstSent = new Set<number>();
        for (const wave of waves) {
          trace.push(`wave ${JSON.stringify(wave)} at +${(lab.clock.now - base) / 1000} s`);
          await Promise.all(
            wave.map(async ({ run, after }) => {
              await new Promise((resolve) => setTimeout(resolve, after));
              // A duplicate of a message already delivered, or the first one if it is due by now.
              if (firstSent.has(run) || messages[run]!.slot <= lab.clock.now) {
                firstSent.add(run);
                await deliver(messages[run]!);
              }
            }),
          );
          pending.push(...lab.queue.take().map((o) => o.message));
        }
        // The messages no wave delivered arrive at their slots, with what the workers sent; SQS goes
        // on redelivering what came back (a retry's message after its backoff). Nothing else acts.
        for (let i = 0; i < runs; i++) if (!firstSent.has(i)) pending.push(messages[i]!);
        for (let round = 0; round < 60 && pending.length > 0; round++) {
          const batch = pending.splice(0);
          trace.push(`round ${round} at +${(lab.clock.now - base) / 1000} s: ${batch.map((m) => slots.indexOf(m.slot)).join(' ')}`);
          await Promise.all(batch.map((m) => deliver(m)));
          pending.push(...lab.queue.take().map((o) => o.message));
          lab.clock.advance(20_000);
        }
        const final = await Promise.all(slots.map((slot) => lab.run(name, slot)));
        const open = final.filter((r) => !r || !isTerminal(r.status)).map((r) => `${r?.runKey} ${r?.status}`);
        const problems: string[] = [];
        if (open.length > 0) problems.push(`never settled without the sweeper: ${open.join('; ')} (no message of theirs left)`);
        if (overlapped > 0) problems.push(`${overlapped} handler(s) started while another of the lane ran`);
        if (overlap === 'forbid-queue') {
          if (started.some((slot, k) => k > 0 && slot < started[k - 1]!))
            problems.push(`out of slot order: ${started.map((s) => slots.indexOf(s)).join(',')}`);
          if (final.some((r) => r?.status !== RunStatus.SUCCEEDED))
            problems.push(`not all SUCCEEDED: ${final.map((r) => r?.status).join(',')}`);
        } else if (final.at(-1)?.status !== RunStatus.SUCCEEDED) {
          problems.push(`the newest run did not run: ${final.at(-1)?.status}`);
        }
        if (lab.metrics.get(MetricName.WorkerRecordErrors) > 0) problems.push('a record failed');
        expect(problems, trace.join('\n')).toEqual([]);
      }),
      { numRuns: Number(process.env.HAND_ON_RUNS ?? 40), seed: Number(process.env.HAND_ON_SEED ?? 20261203), endOnFailure: false },
    );
  });
});
