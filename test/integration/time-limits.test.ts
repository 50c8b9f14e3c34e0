/**
 * Time limits: a job whose attempt cannot fit in one worker invocation is refused at synth and
 * at cold start (unless it checkpoints); a handler that yields without saving progress spends its
 * attempts and ends DEAD instead of being re-claimed forever; a checkpointing job's timeout counts
 * across the invocations its attempt spans.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Duration } from 'aws-cdk-lib';
import { JobConfigError, parseJobs } from '../../shared/schedule/job-schema.js';
import { loadWorkerJobs } from '../../shared/worker/config.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { validateJobsForDeployment } from '../../infra/scheduler-stack.js';
import { testJobs, VirtualTime } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { retryRuns } from '../../shared/operations/retry.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('an attempt must fit in one worker invocation', () => {
  const job = (extra: Record<string, unknown>) => [{ name: 'long', schedule: '* * * * *', handler: 'h', ...extra }];

  it('a timeout longer than the worker allows is refused, naming job, field and the value as written', () => {
    let error: unknown;
    try {
      parseJobs(job({ timeout: '5m' }), { handlers: ['h'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(JobConfigError);
    expect((error as JobConfigError).issues).toEqual([expect.objectContaining({ job: 'long', field: 'timeout', value: '5m' })]);
    expect((error as Error).message).toMatch(
      /job "long": field "timeout": an attempt must fit in one worker invocation: at most 49s with the worker timeout of 1m/,
    );
  });

  it('the default timeout fits the default worker, and a checkpointing job may run longer', () => {
    expect(() => parseJobs(job({}), { handlers: ['h'] })).not.toThrow();
    expect(parseJobs(job({ timeout: '30m', checkpoints: true }), { handlers: ['h'] })[0]).toMatchObject({
      timeout: 1_800_000,
      checkpoints: true,
    });
  });

  it("synth validates against the stack's worker timeout", () => {
    const real = job({ timeout: '40s', handler: 'payments-reconcile' });
    expect(() => validateJobsForDeployment(real, 15, { workerTimeout: Duration.seconds(30) })).toThrow(/field "timeout"/);
    expect(() => validateJobsForDeployment(real, 15, { workerTimeout: Duration.seconds(60) })).not.toThrow();
  });

  it("the worker's cold start validates against its own timeout (WORKER_TIMEOUT_SECONDS)", () => {
    expect(() =>
      loadWorkerJobs(
        job({ timeout: '40s' }).map((j) => ({ ...j, handler: 'payments-reconcile' })),
        { WORKER_TIMEOUT_SECONDS: '30' },
      ),
    ).toThrow(/field "timeout"/);
    expect(() =>
      loadWorkerJobs(
        job({ timeout: '40s' }).map((j) => ({ ...j, handler: 'payments-reconcile' })),
        { WORKER_TIMEOUT_SECONDS: '60' },
      ),
    ).not.toThrow();
  });
});

describe('yields and timeouts across invocations', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  /** Each delivery is one invocation with `budgetMs` of time; the worker yields with `marginMs` left. */
  const invocation = (budgetMs: number, marginMs: number) => {
    const started = Date.now();
    return { remainingTimeMs: () => budgetMs - (Date.now() - started), options: { yieldMarginMs: marginMs } };
  };

  it('a hung handler that never checkpoints spends an attempt on every yield and ends DEAD (not re-claimed forever)', async () => {
    const name = `hung-${Math.random().toString(36).slice(2, 8)}`;
    let runs = 0;
    const hung: JobHandler = {
      async run() {
        runs++;
        await new Promise(() => undefined); // never returns, never checkpoints
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          timeout: '30s',
          lease: '30s',
          retry: { maxAttempts: 3, backoff: { base: 0, max: 0 } },
        },
      ],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: hung }, T0 + 10);
    await lab.create(name, T0);
    for (let k = 0; k < 5 && (await lab.status(name, T0)) !== RunStatus.DEAD; k++)
      await lab.deliver(name, T0, `w${k}`, invocation(400, 200));
    const run = (await lab.run(name, T0))!;
    expect(run.status).toBe(RunStatus.DEAD);
    expect(run.lastError!.code).toBe('YIELDED_WITHOUT_PROGRESS');
    expect(runs).toBe(3);
    expect(run.attempts!.map((a) => a.code)).toEqual(['YIELDED_WITHOUT_PROGRESS', 'YIELDED_WITHOUT_PROGRESS', 'YIELDED_WITHOUT_PROGRESS']);
  });

  it("a handler left running by a yield without progress may have had its effect: the next claim reconciles first, and an operator's revival of the DEAD run reconciles too (model seed 7924)", async () => {
    // Before: a yield without progress was recorded as a plain failure (RETRY, or DEAD without
    // resultUnknown), so the next attempt, or `ops retry` of the DEAD run (→ READY), ran the handler
    // again although the yielded one had never answered.
    const name = `hung-rec-${Math.random().toString(36).slice(2, 8)}`;
    let runs = 0;
    const reconciles: string[] = [];
    const hung: JobHandler = {
      async run() {
        runs++;
        await new Promise(() => undefined); // never returns, never checkpoints
      },
      async reconcile(ctx) {
        reconciles.push(`attempt ${ctx.attempt}`);
        return { outcome: 'not-done' };
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          timeout: '30s',
          lease: '30s',
          retry: { maxAttempts: 2, backoff: { base: 0, max: 0 } },
        },
      ],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: hung }, T0 + 10);
    await lab.create(name, T0);
    await lab.deliver(name, T0, 'w0', invocation(400, 200));
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.UNKNOWN, lastError: { code: 'YIELDED_WITHOUT_PROGRESS' } });
    await lab.deliver(name, T0, 'w1', invocation(400, 200));
    expect(reconciles).toEqual(['attempt 2']);
    const dead = (await lab.run(name, T0))!;
    expect(dead).toMatchObject({ status: RunStatus.DEAD, resultUnknown: true, lastError: { code: 'YIELDED_WITHOUT_PROGRESS' } });

    const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [dead], {
      by: 'test',
    });
    expect(entry).toMatchObject({ action: 'revived', from: RunStatus.DEAD, to: RunStatus.UNKNOWN });
    await lab.deliver(name, T0, 'w2', invocation(400, 200));
    expect(reconciles).toEqual(['attempt 2', 'attempt 1']);
    expect(runs).toBe(3);
  });

  it('a checkpointing job yields with progress without spending attempts, and its timeout counts across invocations', async () => {
    const name = `ckpt-${Math.random().toString(36).slice(2, 8)}`;
    // Virtual time: the handler works 250 ms (virtual) per checkpoint, so how many checkpoints fit
    // in an invocation, and when the timeout strikes, do not depend on the machine's load.
    const time = new VirtualTime(Date.UTC(2026, 11, 1, 12, 0, 5));
    let runs = 0;
    const forever: JobHandler = {
      async run(ctx) {
        runs++;
        let n = typeof ctx.resumeFrom === 'number' ? ctx.resumeFrom : 0;
        while (!ctx.signal.aborted) {
          await ctx.checkpoint(++n);
          time.advance(250);
        }
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          timeout: '8s',
          checkpoints: true,
          lease: '30s',
          retry: { maxAttempts: 2, backoff: { base: 0, max: 0 } },
        },
      ],
      ['h'],
    );
    const slot = Date.UTC(2026, 11, 1, 12, 0);
    const lab = new Lab(box, jobs, { h: forever }, time.now);
    await lab.create(name, slot);
    // Each delivery is one invocation with 3 s (virtual) left; the worker yields with 1 s left.
    const invocationOf3s = () => {
      const started = time.now;
      return {
        clock: time.read,
        timers: time.port,
        remainingTimeMs: () => 3_000 - (time.now - started),
        options: { yieldMarginMs: 1_000 },
      };
    };
    const waiting = async () => ([RunStatus.READY, RunStatus.RETRY] as RunStatus[]).includes((await lab.status(name, slot))!);
    for (let k = 0; k < 10 && (await waiting()); k++) await lab.deliver(name, slot, `w${k}`, invocationOf3s());
    const run = (await lab.run(name, slot))!;
    // 8 s of handler time at ~3 s an invocation: the timeout ends the attempt in its third invocation.
    expect(run).toMatchObject({ status: RunStatus.UNKNOWN, attempt: 1, lastError: { code: 'TIMEOUT' } });
    expect(runs).toBe(3);
    expect(lab.metrics.get('RunsYielded')).toBe(2);
    expect(typeof run.checkpoint).toBe('number');
  });
});
