/**
 * The worker against the real local stack: heartbeats extend both the lease and the message's
 * visibility, duplicate deliveries of finished runs are acknowledged without a second execution,
 * a live lease hides the message, and a refused heartbeat aborts the handler.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { processBatch, type QueueRecord } from '../../shared/worker/batch.js';
import { messageFor } from '../../shared/planner/planner.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { drain, testJobs, VirtualTime } from '../support/helpers.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { workerDeps } from '../support/worker-harness.js';

async function enqueue(box: Sandbox, job: string, slot: number): Promise<void> {
  await box.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: box.endpoints.runQueueUrl,
      MessageBody: JSON.stringify(messageFor({ job, slot, shard: 0, runKey: runKeyOf(job, slot, 0, 1) })),
    }),
  );
}

/**
 * The messages of one job on the file's queue. Earlier tests' messages share the queue (its
 * visibility is 2 s and nothing deletes them), and on a loaded machine they are visible again by
 * the time this receive runs: only `job`'s count. `atLeastOne` polls until one of them comes.
 */
async function receive(
  box: Sandbox,
  job: string,
  options: { visibilityTimeoutSeconds?: number; atLeastOne?: boolean } = {},
): Promise<QueueRecord[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { Messages = [] } = await box.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: box.endpoints.runQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: options.visibilityTimeoutSeconds,
      }),
    );
    const own = Messages.filter((m) => (JSON.parse(m.Body!) as { job?: string }).job === job);
    if (own.length > 0 || !options.atLeastOne || Date.now() > deadline)
      return own.map((m) => ({ messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body! }));
  }
}

describe('worker', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 2 });
  });
  afterAll(() => box.destroy());

  it('a heartbeat extends both the lease and the message visibility while the handler runs', async () => {
    // A lease well above the queue's 2 s visibility, so that only a stall of seconds on a loaded
    // machine (the lease then rightly runs out and the message comes back) could show the message.
    const jobs = testJobs(
      [{ name: 'slow', schedule: '* * * * *', handler: 'slow', lease: 5_000, heartbeatEvery: 1_000, startLead: 0 }],
      ['slow'],
    );
    const slot = Date.now() - 100;
    await box.ledger.createRun({ job: 'slow', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    await enqueue(box, 'slow', slot);
    const leases: number[] = [];
    let visibleDuringRun = 0;
    const slow: JobHandler = {
      async run() {
        for (let i = 0; i < 6; i++) {
          await new Promise((r) => setTimeout(r, 600));
          leases.push((await box.ledger.getRun({ job: 'slow', slot, shard: 0 }))!.leaseUntil!);
          // Queue visibility is 2 s: without heartbeats the message would be back by now.
          const { Messages = [] } = await box.clients.sqs.send(
            new ReceiveMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, WaitTimeSeconds: 0, VisibilityTimeout: 1 }),
          );
          visibleDuringRun += Messages.length;
        }
      },
    };
    const results: string[][] = [];
    // The poller deletes acknowledged messages, as the event source mapping does.
    const poller = new LocalPoller(
      box.clients.sqs,
      async (records) => {
        const result = await processBatch(workerDeps(box, jobs, { slow }, 'hb-worker'), records);
        results.push(result.batchItemFailures.map((f) => f.itemIdentifier));
        return result;
      },
      { queueUrl: box.endpoints.runQueueUrl },
    );
    expect(await poller.pollOnce()).toBe(1);
    expect(results).toEqual([[]]);
    expect(visibleDuringRun).toBe(0);
    // The handler ran 3.6 s, past the queue's visibility; the lease kept moving forward.
    expect(leases[leases.length - 1]!).toBeGreaterThan(leases[0]! + 1_000);
    expect((await box.ledger.getRun({ job: 'slow', slot, shard: 0 }))?.status).toBe(RunStatus.SUCCEEDED);
  });

  it('a duplicate delivery of a finished run is acknowledged without running the handler again', async () => {
    const jobs = testJobs([{ name: 'dup', schedule: '* * * * *', handler: 'count', startLead: 0 }], ['count']);
    const slot = Date.now() - 100;
    await box.ledger.createRun({ job: 'dup', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    await enqueue(box, 'dup', slot);
    await enqueue(box, 'dup', slot);
    let executions = 0;
    const count: JobHandler = { run: async () => void executions++ };
    const deps = workerDeps(box, jobs, { count }, 'dup-worker');
    const messages = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 2, visibilityTimeoutSeconds: 30 });
    expect(messages).toHaveLength(2);
    for (const m of messages) {
      const result = await processBatch(deps, [{ messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body! }]);
      expect(result.batchItemFailures).toEqual([]);
    }
    expect(executions).toBe(1);
    expect((deps.metrics as InMemoryMetrics).get('DuplicateDeliveries')).toBe(1);
  });

  it('the same message twice in one batch runs once and is reported consistently', async () => {
    const jobs = testJobs([{ name: 'twice', schedule: '* * * * *', handler: 'count', startLead: 0 }], ['count']);
    const slot = Date.now() - 100;
    await box.ledger.createRun({ job: 'twice', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    let executions = 0;
    const count: JobHandler = { run: async () => void executions++ };
    const body = JSON.stringify(messageFor({ job: 'twice', slot, shard: 0, runKey: runKeyOf('twice', slot, 0, 1) }));
    const result = await processBatch(workerDeps(box, jobs, { count }, 'w'), [
      { messageId: 'm-1', receiptHandle: 'r-1', body },
      { messageId: 'm-1', receiptHandle: 'r-2', body },
    ]);
    expect(result.batchItemFailures).toEqual([]);
    expect(executions).toBe(1);
  });

  it('one record whose ledger call throws is reported failed alone: the rest of its batch completes and is acknowledged', async () => {
    const jobs = testJobs([{ name: 'isolated', schedule: '* * * * *', handler: 'count', startLead: 0 }], ['count']);
    const base = Date.now() - 60_000;
    const slots = [base, base + 1_000, base + 2_000];
    for (const slot of slots)
      await box.ledger.createRun({ job: 'isolated', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    // The ledger answers every run but one, whose claim fails the way an exhausted SDK retry does.
    const ledger = Object.create(box.ledger) as typeof box.ledger;
    ledger.claim = (message, ...rest) =>
      message.slot === slots[1]
        ? Promise.reject(Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' }))
        : box.ledger.claim(message, ...rest);
    const ran: number[] = [];
    const count: JobHandler = { run: async (ctx) => void ran.push(ctx.slot) };
    const metrics = new InMemoryMetrics();
    const logs: string[] = [];
    const logger = new JsonLineLogger((line) => logs.push(line), {}, 'debug');
    const records = slots.map((slot, i) => ({
      messageId: `iso-${i}`,
      receiptHandle: `r-${i}`,
      body: JSON.stringify(messageFor({ job: 'isolated', slot, shard: 0, runKey: runKeyOf('isolated', slot, 0, 1) })),
    }));
    const result = await processBatch(workerDeps(box, jobs, { count }, 'iso-worker', { ledger, metrics, logger }), records);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'iso-1' }]);
    expect(ran.sort()).toEqual([slots[0], slots[2]]);
    expect((await box.ledger.getRun({ job: 'isolated', slot: slots[0]!, shard: 0 }))?.status).toBe(RunStatus.SUCCEEDED);
    expect((await box.ledger.getRun({ job: 'isolated', slot: slots[1]!, shard: 0 }))?.status).toBe(RunStatus.READY);
    expect(metrics.get('WorkerRecordErrors')).toBe(1);
    const line = logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.message === 'record failed: reported to SQS for redelivery');
    expect(line).toMatchObject({
      level: 'error',
      messageId: 'iso-1',
      error: 'ThrottlingException: Rate of requests exceeds the allowed throughput.',
    });
  });

  it('a run leased by a live owner is not executed and its message is hidden until the lease can expire', async () => {
    const jobs = testJobs([{ name: 'held', schedule: '* * * * *', handler: 'count', lease: '20s', startLead: 0 }], ['count']);
    const slot = Date.now() - 100;
    await box.ledger.createRun({ job: 'held', slot, shard: 0, shards: 1, status: RunStatus.READY }, Date.now());
    const claim = await box.ledger.claim({ job: 'held', slot, shard: 0 }, 'someone-else', Date.now(), 20_000, 2_000);
    expect(claim.kind).toBe('claimed');
    await enqueue(box, 'held', slot);
    let executions = 0;
    const count: JobHandler = { run: async () => void executions++ };
    const records = await receive(box, 'held', { atLeastOne: true });
    expect(records.map((r) => JSON.parse(r.body).job)).toEqual(['held']);
    const result = await processBatch(workerDeps(box, jobs, { count }, 'second'), records);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
    expect(executions).toBe(0);
    // Queue visibility is 2 s; the worker hid it for ~22 s.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await receive(box, 'held', { visibilityTimeoutSeconds: 1 })).toHaveLength(0);
  });

  it("a message back at the end of a dead holder's lease waits out the clock allowance in process: takeover within lease + allowance, not a second later", async () => {
    // heartbeatEvery 600 ms → clock allowance 300 ms (half a heartbeat). The worker's clock and
    // timers are virtual and time moves only by the worker's own wait (the one sleep it sets), so
    // how long the ledger calls take on a loaded machine cannot move the takeover.
    const jobs = testJobs(
      [{ name: 'orphaned', schedule: '* * * * *', handler: 'count', lease: 1_800, heartbeatEvery: 600, startLead: 0 }],
      ['count'],
    );
    const time = new VirtualTime(Date.now());
    const slot = time.now - 100;
    const id = { job: 'orphaned', slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
    const dead = await box.ledger.claim(id, 'dead-holder', time.now, 1_800, 300);
    if (dead.kind !== 'claimed') throw new Error(`setup: claim refused (${dead.kind})`);
    const leaseUntil = dead.run.leaseUntil!;
    // SQS gives the message back at the lease's end (whole-second visibility, rounded up).
    time.advance(leaseUntil - time.now + 20);
    const startedAt: number[] = [];
    const count: JobHandler = { run: async () => void startedAt.push(time.now) };
    const sleeps: number[] = [];
    const timers = { ...time.port, setTimeout: (fn: () => void, ms: number) => (sleeps.push(ms), time.port.setTimeout(fn, ms)) };
    const deps = workerDeps(box, jobs, { count }, 'successor', { clock: time.read, timers });
    const body = JSON.stringify(messageFor({ ...id, runKey: runKeyOf('orphaned', slot, 0, 1) }));
    let done = false;
    const batch = processBatch(deps, [{ messageId: 'm-orphaned', receiptHandle: 'r-orphaned', body }]).finally(() => (done = true));
    // Let the worker's wait pass (exactly as long as it asked for), then let it finish.
    while (!done) {
      const ms = sleeps.shift();
      if (ms !== undefined) time.advance(ms);
      else await new Promise((r) => setTimeout(r, 5));
    }
    const result = await batch;
    expect(result.batchItemFailures).toEqual([]);
    expect(startedAt).toHaveLength(1);
    // Not before the allowance has passed, and well before a re-hidden message (≥ 1 s) would return.
    expect(startedAt[0]!).toBeGreaterThan(leaseUntil + 300);
    expect(startedAt[0]! - (leaseUntil + 300)).toBeLessThan(500);
    const run = await box.ledger.getRun(id);
    expect(run).toMatchObject({ status: RunStatus.SUCCEEDED, owner: 'successor' });
  });

  it('a live holder keeps its run: a message back early finds the lease renewed after the wait and is hidden again', async () => {
    const jobs = testJobs(
      [{ name: 'alive', schedule: '* * * * *', handler: 'count', lease: 1_800, heartbeatEvery: 600, startLead: 0 }],
      ['count'],
    );
    const slot = Date.now() - 100;
    const id = { job: 'alive', slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    const held = await box.ledger.claim(id, 'live-holder', Date.now(), 1_800, 300);
    if (held.kind !== 'claimed') throw new Error(`setup: claim refused (${held.kind})`);
    await new Promise((r) => setTimeout(r, held.run.leaseUntil! - Date.now() - 200));
    // The holder heartbeats while the successor waits out the allowance.
    const renew = setTimeout(() => void box.ledger.heartbeat(held.run, Date.now() + 1_800), 100);
    let executions = 0;
    const count: JobHandler = { run: async () => void executions++ };
    const body = JSON.stringify(messageFor({ ...id, runKey: runKeyOf('alive', slot, 0, 1) }));
    try {
      const result = await processBatch(workerDeps(box, jobs, { count }, 'successor'), [
        { messageId: 'm-alive', receiptHandle: 'r-alive', body },
      ]);
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm-alive' }]);
    } finally {
      clearTimeout(renew);
    }
    expect(executions).toBe(0);
    expect(await box.ledger.getRun(id)).toMatchObject({ status: RunStatus.RUNNING, owner: 'live-holder' });
  });

  it('a refused heartbeat aborts the handler through ctx.signal and records nothing', async () => {
    const jobs = testJobs(
      [{ name: 'lost', schedule: '* * * * *', handler: 'wait', lease: 1_000, heartbeatEvery: 300, startLead: 0 }],
      ['wait'],
    );
    const slot = Date.now() - 100;
    const id = { job: 'lost', slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    let aborted = false;
    const wait: JobHandler = {
      async run(ctx) {
        // Someone else takes the run over behind this worker's back (e.g. after a long GC pause).
        const now = Date.now();
        await box.ledger.claim(id, 'usurper', now + 10_000, 1_000, 0);
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = true;
      },
    };
    const metricsSink = new InMemoryMetrics();
    const result = await processBatch(workerDeps(box, jobs, { wait }, 'victim', { metrics: metricsSink }), [
      { messageId: 'm-lost', receiptHandle: 'r-lost', body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf('lost', slot, 0, 1) })) },
    ]);
    expect(aborted).toBe(true);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm-lost' }]);
    expect(metricsSink.get('LeaseLost')).toBe(1);
    const run = await box.ledger.getRun(id);
    expect(run?.owner).toBe('usurper');
    expect(run?.status).toBe(RunStatus.RUNNING);
  });
});
