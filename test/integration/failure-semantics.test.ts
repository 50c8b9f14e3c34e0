/**
 * The run state machine of DESIGN §5 through the real worker and ledger: retries with backoff,
 * DEAD by budget, deadline and permanent errors, UNKNOWN with reconcile, poison messages, and the
 * trace fields every log line carries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { RunStatus } from '../../shared/core/vocabulary.js';
import {
  PermanentError,
  ReconcileOutcome,
  ResultUnknownError,
  RetryableError,
  type JobHandler,
  type ReconcileResult,
} from '../../shared/handler-api.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { processBatch } from '../../shared/worker/batch.js';
import { messageFor } from '../../shared/planner/planner.js';
import { runKeyOf } from '../../shared/core/vocabulary.js';
import { silentLogger, testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { Lab } from '../support/lab.js';
import { WorkerHarness } from '../support/worker-harness.js';

async function createAndEnqueue(box: Sandbox, job: string, slot: number): Promise<void> {
  await box.ledger.createRun({ job, slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
  await box.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: box.endpoints.runQueueUrl,
      MessageBody: JSON.stringify(messageFor({ job, slot, shard: 0, runKey: runKeyOf(job, slot, 0, 1) })),
    }),
  );
}

describe('run state machine', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 5 });
  });
  afterAll(() => box.destroy());

  it('retries with exponential backoff and full jitter, hiding the message until nextAttemptAt', async () => {
    let calls = 0;
    const flaky: JobHandler = {
      async run() {
        calls++;
        if (calls < 3) throw new RetryableError(`transient #${calls}`, { code: 'FLAKY' });
        return { evidence: { calls } };
      },
    };
    const jobs = testJobs(
      [
        {
          name: 'flaky',
          schedule: '* * * * *',
          handler: 'flaky',
          startLead: 0,
          retry: { maxAttempts: 3, backoff: { base: 400, max: 1_000 } },
        },
      ],
      ['flaky'],
    );
    const harness = new WorkerHarness(box, jobs, { flaky });
    const slot = Date.now() - 50;
    await createAndEnqueue(box, 'flaky', slot);
    const poller = harness.poller('w-flaky');
    poller.start();
    const run = await waitFor(
      async () => {
        const r = await box.ledger.getRun({ job: 'flaky', slot, shard: 0 });
        return r?.status === RunStatus.SUCCEEDED ? r : undefined;
      },
      20_000,
      'flaky to succeed',
    );
    await poller.stop();
    expect(calls).toBe(3);
    expect(run.attempt).toBe(3);
    expect(run.evidence).toEqual({ calls: 3 });
    const outcomes = harness.outcomes();
    expect(outcomes.map((o) => o.status)).toEqual([RunStatus.RETRY, RunStatus.RETRY, RunStatus.SUCCEEDED]);
    // Each retry's claim happened no earlier than its backoff allowed (≤ base·2^(n-1), capped).
    const claims = harness.events.filter((e) => e.type === 'claimed');
    expect(claims.map((c) => (c.type === 'claimed' ? c.attempt : 0))).toEqual([1, 2, 3]);
    for (let i = 0; i < 2; i++) {
      const retry = outcomes[i]!;
      const ceiling = Math.min(1_000, 400 * 2 ** i);
      expect(retry.nextAttemptAt! - retry.at).toBeGreaterThanOrEqual(0);
      expect(retry.nextAttemptAt! - retry.at).toBeLessThanOrEqual(ceiling);
      // The message stayed hidden: the next claim came no earlier than nextAttemptAt.
      expect(claims[i + 1]!.at).toBeGreaterThanOrEqual(retry.nextAttemptAt!);
    }
    expect(harness.metrics.get('RunsRetried')).toBe(2);
  });

  it('goes DEAD when attempts run out, recording the last error', async () => {
    const broken: JobHandler = {
      run: async () => {
        throw new Error('always broken');
      },
    };
    const jobs = testJobs(
      [
        {
          name: 'broken',
          schedule: '* * * * *',
          handler: 'broken',
          startLead: 0,
          retry: { maxAttempts: 2, backoff: { base: 100, max: 200 } },
        },
      ],
      ['broken'],
    );
    const harness = new WorkerHarness(box, jobs, { broken });
    const slot = Date.now() - 50;
    await createAndEnqueue(box, 'broken', slot);
    const poller = harness.poller('w-broken');
    poller.start();
    const run = await waitFor(
      async () => {
        const r = await box.ledger.getRun({ job: 'broken', slot, shard: 0 });
        return r?.status === RunStatus.DEAD ? r : undefined;
      },
      20_000,
      'broken to go DEAD',
    );
    await poller.stop();
    expect(run.attempt).toBe(2);
    expect(run.lastError?.message).toContain('always broken');
    expect(run.lastError?.message).toContain('attempts exhausted');
    expect(harness.metrics.get('RunsDead')).toBe(1);
  });

  it('a PermanentError goes DEAD at once; a retry that would pass the deadline goes DEAD', async () => {
    const permanent: JobHandler = {
      run: async () => {
        throw new PermanentError('bad request', { code: 'BAD_REQUEST' });
      },
    };
    const late: JobHandler = {
      run: async () => {
        throw new RetryableError('slow dependency');
      },
    };
    const jobs = testJobs(
      [
        { name: 'permanent', schedule: '* * * * *', handler: 'permanent', startLead: 0 },
        {
          name: 'late',
          schedule: '* * * * *',
          handler: 'late',
          startLead: 0,
          deadline: '1s',
          retry: { maxAttempts: 5, backoff: { base: '5s', max: '5s', jitter: 'none' } },
        },
      ],
      ['permanent', 'late'],
    );
    const harness = new WorkerHarness(box, jobs, { permanent, late });
    const slot = Date.now() - 50;
    for (const job of ['permanent', 'late'])
      await box.ledger.createRun({ job, slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    const result = await processBatch(harness.deps('w'), [harness.record('permanent', slot), harness.record('late', slot)]);
    expect(result.batchItemFailures).toEqual([]);
    const p = await box.ledger.getRun({ job: 'permanent', slot, shard: 0 });
    expect(p).toMatchObject({ status: RunStatus.DEAD, attempt: 1, lastError: { code: 'BAD_REQUEST' } });
    const l = await box.ledger.getRun({ job: 'late', slot, shard: 0 });
    expect(l?.status).toBe(RunStatus.DEAD);
    expect(l?.lastError?.message).toContain('deadline');
  });

  it('a takeover of a run whose holder died mid-attempt reconciles first: an effect that landed is not done again', async () => {
    let executions = 0;
    const reconciledAt: number[] = [];
    const handlers: Record<string, JobHandler> = {
      charge: {
        async run() {
          executions++;
        },
        async reconcile(ctx) {
          reconciledAt.push(ctx.fencingToken);
          return { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { chargeId: 'ch-1' } };
        },
      },
    };
    const jobs = testJobs(
      [{ name: 'died-mid-attempt', schedule: '* * * * *', handler: 'charge', startLead: 0, lease: 600, heartbeatEvery: 200 }],
      ['charge'],
    );
    const harness = new WorkerHarness(box, jobs, handlers);
    const slot = Date.now() - 50;
    const id = { job: 'died-mid-attempt', slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    // The first holder claims and dies without recording anything.
    const first = await box.ledger.claim(id, 'died', Date.now(), 600, 100);
    if (first.kind !== 'claimed') throw new Error(`setup: claim refused (${first.kind})`);
    await new Promise((r) => setTimeout(r, first.run.leaseUntil! - Date.now() + 150));
    const result = await processBatch(harness.deps('successor'), [harness.record('died-mid-attempt', slot)]);
    expect(result.batchItemFailures).toEqual([]);
    expect(executions).toBe(0);
    expect(reconciledAt).toHaveLength(1);
    expect(reconciledAt[0]!).toBeGreaterThan(first.run.fencingToken);
    expect(await box.ledger.getRun(id)).toMatchObject({ status: RunStatus.SUCCEEDED, owner: 'successor', evidence: { chargeId: 'ch-1' } });
    expect(harness.events.some((e) => e.type === 'claimed' && e.from === RunStatus.RUNNING)).toBe(true);
  });

  it('a result-unknown error goes UNKNOWN and the next claim reconciles first with the same runKey', async () => {
    const cases: { name: string; verdict: ReconcileResult; expectRuns: number; expectStatus: string }[] = [
      {
        name: 'unknown-done',
        verdict: { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { paymentId: 'p-1' } },
        expectRuns: 1,
        expectStatus: RunStatus.SUCCEEDED,
      },
      { name: 'unknown-not-done', verdict: { outcome: ReconcileOutcome.NOT_DONE }, expectRuns: 2, expectStatus: RunStatus.SUCCEEDED },
      {
        name: 'unknown-still',
        verdict: { outcome: ReconcileOutcome.STILL_UNKNOWN, reason: 'provider silent' },
        expectRuns: 1,
        expectStatus: RunStatus.DEAD,
      },
    ];
    const runs = new Map<string, number>();
    const reconciledWith = new Map<string, string>();
    const handlers: Record<string, JobHandler> = {};
    for (const c of cases) {
      handlers[c.name] = {
        async run(ctx) {
          const n = (runs.get(c.name) ?? 0) + 1;
          runs.set(c.name, n);
          if (n === 1) throw new ResultUnknownError('payment provider timed out', { cause: new Error('ETIMEDOUT') });
          return { evidence: 'ran again' };
        },
        async reconcile(ctx) {
          reconciledWith.set(c.name, ctx.runKey);
          return c.verdict;
        },
      };
    }
    const jobs = testJobs(
      cases.map((c) => ({
        name: c.name,
        schedule: '* * * * *',
        handler: c.name,
        startLead: 0,
        retry: { maxAttempts: 2, backoff: { base: 0, max: 0 } },
      })),
      Object.keys(handlers),
    );
    const harness = new WorkerHarness(box, jobs, handlers);
    const slot = Date.now() - 50;
    for (const c of cases) await box.ledger.createRun({ job: c.name, slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    const records = cases.map((c) => harness.record(c.name, slot));
    await processBatch(harness.deps('w1'), records);
    for (const c of cases) expect((await box.ledger.getRun({ job: c.name, slot, shard: 0 }))?.status).toBe(RunStatus.UNKNOWN);
    await new Promise((r) => setTimeout(r, 20));
    await processBatch(harness.deps('w2'), records);
    for (const c of cases) {
      const run = await box.ledger.getRun({ job: c.name, slot, shard: 0 });
      expect(run?.status, c.name).toBe(c.expectStatus);
      expect(runs.get(c.name), c.name).toBe(c.expectRuns);
      expect(reconciledWith.get(c.name)).toBe(runKeyOf(c.name, slot, 0, 1));
    }
    expect((await box.ledger.getRun({ job: 'unknown-done', slot, shard: 0 }))?.evidence).toEqual({ paymentId: 'p-1' });
  });

  it('a reconcile that throws (a retryable or permanent error) settles nothing: the run stays UNKNOWN and the next claim reconciles again before running (model seed 20277041)', async () => {
    // Before: the reconcile's error was recorded as a plain failure (RETRY, or DEAD without
    // resultUnknown), so the next claim, from RETRY, ran the handler without any reconcile although
    // the first attempt's effect may have landed.
    const cases = [
      { name: 'rec-throttled', error: () => new RetryableError('throttled', { code: 'ProvisionedThroughputExceededException' }) },
      { name: 'rec-permanent', error: () => new PermanentError('cannot ask the provider', { code: 'NO_PROVIDER' }) },
    ];
    const runs = new Map<string, number>();
    const reconciles = new Map<string, number>();
    const handlers: Record<string, JobHandler> = {};
    for (const c of cases) {
      handlers[c.name] = {
        async run() {
          const n = (runs.get(c.name) ?? 0) + 1;
          runs.set(c.name, n);
          if (n === 1) throw new ResultUnknownError('provider timed out');
          return { evidence: 'ran again' };
        },
        async reconcile() {
          const n = (reconciles.get(c.name) ?? 0) + 1;
          reconciles.set(c.name, n);
          if (n === 1) throw c.error();
          return { outcome: ReconcileOutcome.NOT_DONE };
        },
      };
    }
    const jobs = testJobs(
      cases.map((c) => ({
        name: c.name,
        schedule: '* * * * *',
        handler: c.name,
        startLead: 0,
        retry: { maxAttempts: 3, backoff: { base: 0, max: 0 } },
      })),
      Object.keys(handlers),
    );
    const harness = new WorkerHarness(box, jobs, handlers);
    const slot = Date.now() - 50;
    for (const c of cases) await box.ledger.createRun({ job: c.name, slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    const records = cases.map((c) => harness.record(c.name, slot));
    await processBatch(harness.deps('w1'), records);
    await processBatch(harness.deps('w2'), records);
    for (const c of cases) {
      expect(await box.ledger.getRun({ job: c.name, slot, shard: 0 }), c.name).toMatchObject({ status: RunStatus.UNKNOWN });
      expect(runs.get(c.name), `${c.name}: the handler did not run again under the failed reconcile`).toBe(1);
    }
    await new Promise((r) => setTimeout(r, 20));
    await processBatch(harness.deps('w3'), records);
    for (const c of cases) {
      expect(reconciles.get(c.name), c.name).toBe(2);
      expect(runs.get(c.name), c.name).toBe(2);
      expect((await box.ledger.getRun({ job: c.name, slot, shard: 0 }))?.status, c.name).toBe(RunStatus.SUCCEEDED);
    }
  });

  it('an attempt past its timeout ends UNKNOWN and the handler is told to stop', async () => {
    let sawAbort = false;
    const hang: JobHandler = {
      run: (ctx) =>
        new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            resolve();
          });
        }),
    };
    const jobs = testJobs([{ name: 'hang', schedule: '* * * * *', handler: 'hang', startLead: 0, timeout: 300 }], ['hang']);
    const harness = new WorkerHarness(box, jobs, { hang });
    const slot = Date.now() - 50;
    await box.ledger.createRun({ job: 'hang', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    await processBatch(harness.deps('w'), [harness.record('hang', slot)]);
    const run = await box.ledger.getRun({ job: 'hang', slot, shard: 0 });
    expect(run).toMatchObject({ status: RunStatus.UNKNOWN, lastError: { code: 'TIMEOUT' } });
    expect(sawAbort).toBe(true);
  });

  it('poison messages in a mixed batch are counted and left for the DLQ; healthy records succeed', async () => {
    const ok: JobHandler = { run: async () => ({ evidence: 'fine' }) };
    const jobs = testJobs([{ name: 'healthy', schedule: '* * * * *', handler: 'ok', startLead: 0 }], ['ok']);
    const harness = new WorkerHarness(box, jobs, { ok });
    const slot = Date.now() - 50;
    await box.ledger.createRun({ job: 'healthy', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    await box.ledger.createRun({ job: 'healthy', slot: slot + 1, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    const bodies = [
      '{not json',
      JSON.stringify({ v: 1, job: 'nope', slot, shard: 0, runKey: `nope@${new Date(slot).toISOString()}` }),
      JSON.stringify({ v: 2, job: 'healthy', slot, shard: 0, runKey: 'x' }),
    ];
    const result = await processBatch(harness.deps('w'), [
      harness.record('healthy', slot, 'good-1'),
      ...bodies.map((body, i) => ({ messageId: `bad-${i}`, receiptHandle: `r-bad-${i}`, body })),
      harness.record('healthy', slot + 1, 'good-2'),
    ]);
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['bad-0', 'bad-1', 'bad-2']);
    expect(harness.metrics.get('PoisonMessages')).toBe(3);
    for (const id of ['bad-0', 'bad-1', 'bad-2']) expect(harness.logs.some((l) => l.messageId === id && l.level === 'error')).toBe(true);
    for (const s of [slot, slot + 1])
      expect((await box.ledger.getRun({ job: 'healthy', slot: s, shard: 0 }))?.status).toBe(RunStatus.SUCCEEDED);

    // Through the queue: after maxReceiveCount (2 here) receives, the poison messages sit in the DLQ.
    const strict = await sandbox({ visibilityTimeoutSeconds: 5, maxReceiveCount: 2 });
    for (const body of bodies)
      await strict.clients.sqs.send(new SendMessageCommand({ QueueUrl: strict.endpoints.runQueueUrl, MessageBody: body }));
    const poller = new WorkerHarness(strict, jobs, { ok }).poller('w-poison');
    poller.start();
    const depth = await waitFor(
      async () => {
        const { Attributes } = await strict.clients.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: strict.endpoints.deadLetterQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
        );
        const n = Number(Attributes?.ApproximateNumberOfMessages ?? 0);
        return n >= 3 ? n : undefined;
      },
      30_000,
      'poison messages in the DLQ',
    );
    await poller.stop();
    strict.destroy();
    expect(depth).toBe(3);
  });

  it('a message that keeps failing is hidden 2, 4, 8, 16, 32 s, then a minute per receive: poison reaches the DLQ in minutes, a transient fault is retried in seconds', async () => {
    const jobs = testJobs([{ name: 'healthy', schedule: '* * * * *', handler: 'ok', startLead: 0 }], ['ok']);
    const lab = new Lab(box, jobs, { ok: { run: async () => undefined } }, Date.now());
    const receives: [string | undefined, number][] = [
      [undefined, 2],
      ['x', 2],
      ['1', 2],
      ['2', 4],
      ['3', 8],
      ['4', 16],
      ['5', 32],
      ['6', 60],
      ['50', 60],
    ];
    for (const [count] of receives) {
      const record = {
        messageId: `p-${count}`,
        receiptHandle: `r-p-${count}`,
        body: '{not json',
        ...(count === undefined ? {} : { attributes: { ApproximateReceiveCount: count } }),
      };
      expect(await processBatch(lab.deps('w'), [record])).toEqual({ batchItemFailures: [{ itemIdentifier: `p-${count}` }] });
    }
    expect(lab.queue.hidden.map((h) => h.seconds)).toEqual(receives.map(([, seconds]) => seconds));
  });

  it('every log line about a run carries the trace fields', async () => {
    const ok: JobHandler = { run: async (ctx) => ctx.logger.info('handler says hi') };
    const jobs = testJobs([{ name: 'traced', schedule: '* * * * *', handler: 'ok', startLead: 0 }], ['ok']);
    const harness = new WorkerHarness(box, jobs, { ok });
    const slot = Date.now() - 50;
    await box.ledger.createRun({ job: 'traced', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    await processBatch(harness.deps('tracer'), [harness.record('traced', slot, 'msg-traced')]);
    const lines = harness.logs.filter((l) => l.message === 'handler says hi' || l.message === 'run outcome');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatchObject({
        job: 'traced',
        slot: new Date(slot).toISOString(),
        shard: 0,
        runKey: runKeyOf('traced', slot, 0, 1),
        messageId: 'msg-traced',
        owner: 'tracer',
        attempt: 1,
      });
      expect(typeof line.fencingToken).toBe('number');
    }
  });

  it('the planner and worker agree: a silent planner tick leaves nothing to sweep', async () => {
    // Guard against the sweeper re-sending healthy in-flight runs (a re-send storm).
    const ok: JobHandler = { run: async () => undefined };
    const jobs = testJobs([{ name: 'calm', schedule: '*/10 * * * * *', handler: 'ok', startLead: 0 }], ['ok']);
    const report = await runPlannerTick(
      {
        ledger: box.ledger,
        queue: box.queue,
        jobs,
        clock: Date.now,
        logger: silentLogger(),
        metrics: new WorkerHarness(box, jobs, { ok }).metrics,
      },
      { partition: 0, of: 1 },
    );
    expect(report.swept).toBe(0);
  });
});
