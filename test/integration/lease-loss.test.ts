/**
 * What a lease lost or held by someone else does to a worker, measured against the real local
 * stack with a lease much longer than the heartbeat, so that only the heartbeat's refusal (and not
 * the lease running out) can explain a prompt stop:
 * - a holder whose heartbeat is refused stops its handler through ctx.signal within about one
 *   heartbeat, long before its own lease would have ended;
 * - a message whose run another owner leases live is not dropped: it comes back, and once that
 *   owner is gone the run is taken over and completes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { jobsByName } from '../../shared/config.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { AttemptAbort, AttemptAbortedError, type JobHandler, type RunContext } from '../../shared/handler-api.js';
import { InMemoryMetrics } from '../../shared/observability.js';
import { messageFor } from '../../shared/planner.js';
import { processBatch, type WorkerDeps } from '../../shared/worker.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { silentLogger, testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const LEASE = 20_000;
const HEARTBEAT = 300;

function deps(box: Sandbox, jobs: ReturnType<typeof testJobs>, handlers: Record<string, JobHandler>, owner: string, metrics = new InMemoryMetrics()): WorkerDeps {
  return {
    ledger: box.ledger,
    queue: box.queue,
    doc: box.clients.doc,
    jobs: jobsByName(jobs),
    handlers,
    tables: { ledger: box.endpoints.ledgerTable, payments: box.endpoints.paymentsTable },
    owner,
    clock: Date.now,
    logger: silentLogger(),
    metrics,
  };
}

const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`;

describe('lease loss', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 2 });
  });
  afterAll(() => box.destroy());

  // Both ways a live holder loses its run: a successor's claim (its clock says the lease is over:
  // the holder froze, or its clock is slow) and overlap `replace` advancing the fence.
  it.each([
    ['a successor claims the run', (id: RunId) => box.ledger.claim(id, 'successor', Date.now() + LEASE + 10_000, LEASE, 2_000).then((c) => c.kind === 'claimed'), { status: RunStatus.RUNNING, owner: 'successor' }],
    ['overlap replace advances its fence', async (id: RunId) => box.ledger.replaceRunning((await box.ledger.getRun(id))!, 'a newer run', Date.now()), { status: RunStatus.SUPERSEDED }],
  ] as const)('%s: the holder\'s ctx.signal aborts within about one heartbeat of the refused heartbeat, long before its lease ends', async (_how, takeOver, after) => {
    const name = unique('lost');
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'wait', lease: LEASE, heartbeatEvery: HEARTBEAT, startLead: 0, timeout: '60s' }], ['wait']);
    const slot = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const id = { job: name, slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    let running!: (ctx: RunContext) => void;
    const started = new Promise<RunContext>((resolve) => (running = resolve));
    let abortedAt: number | undefined;
    const wait: JobHandler = {
      async run(ctx) {
        ctx.signal.addEventListener('abort', () => (abortedAt = Date.now()), { once: true });
        running(ctx);
        // Waits for the abort, but never longer than half the lease: a holder that does not stop on
        // the refusal fails the assertion below instead of the test timing out.
        await new Promise<void>((resolve) => {
          const deadline = setTimeout(resolve, LEASE / 2);
          ctx.signal.addEventListener('abort', () => (clearTimeout(deadline), resolve()), { once: true });
        });
      },
    };
    const metrics = new InMemoryMetrics();
    const record = { messageId: `m-${name}`, receiptHandle: `r-${name}`, body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })) };
    const holder = processBatch(deps(box, jobs, { wait }, 'holder', metrics), [record]);
    const ctx = await started;
    expect(await takeOver(id)).toBe(true);
    const lostAt = Date.now();
    const result = await holder;

    // About one heartbeat (300 ms) plus a ledger round trip; the bound is generous for a busy
    // machine and still a quarter of the lease: a holder that only stops when its lease runs out
    // (≈ 20 s) or never fails it.
    expect(abortedAt, 'ctx.signal never aborted within half the lease').toBeDefined();
    expect(abortedAt! - lostAt).toBeLessThan(LEASE / 4);
    expect(ctx.signal.reason).toBeInstanceOf(AttemptAbortedError);
    expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.LEASE_LOST);
    // Nothing recorded: the message is left to come back, the run is the successor's.
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(metrics.get('LeaseLost')).toBe(1);
    expect(metrics.get('RunsSucceeded')).toBe(0);
    expect(await box.ledger.getRun(id)).toMatchObject(after);
  });

  it('a message that finds its run leased by a live owner comes back: once that owner is gone, the run is taken over and completes', async () => {
    const name = unique('leased');
    // heartbeatEvery 500 ms → clock allowance 250 ms.
    const lease = 2_000;
    const allowance = 250;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'count', lease, heartbeatEvery: 500, startLead: 0 }], ['count']);
    const slot = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const id = { job: name, slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    // Another worker holds the run, then vanishes without a heartbeat (its invocation was killed).
    const held = await box.ledger.claim(id, 'vanished', Date.now(), lease, allowance);
    if (held.kind !== 'claimed') throw new Error(`setup: claim refused (${held.kind})`);
    const leaseUntil = held.run.leaseUntil!;
    await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, MessageBody: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })) }));
    const startedAt: number[] = [];
    const count: JobHandler = { run: async () => void startedAt.push(Date.now()) };
    const metrics = new InMemoryMetrics();
    const poller = new LocalPoller(box.clients.sqs, (records) => processBatch(deps(box, jobs, { count }, 'successor', metrics), records), { queueUrl: box.endpoints.runQueueUrl });
    poller.start();
    let done: Run;
    try {
      // The first delivery finds the live lease and hides the message until it can expire; SQS
      // gives it back in whole seconds and the poller looks every ~50 ms: 3 s of slack past lease
      // + allowance. A worker that acknowledged the message instead leaves the run RUNNING forever.
      done = await waitFor(async () => {
        const run = await box.ledger.getRun(id);
        return run?.status === RunStatus.SUCCEEDED ? run : undefined;
      }, leaseUntil + allowance + 3_000 - Date.now(), 'the run to be taken over and completed');
    } finally {
      await poller.stop();
    }
    expect(metrics.get('ClaimConflicts')).toBeGreaterThanOrEqual(1);
    expect(done).toMatchObject({ owner: 'successor', claimedFrom: RunStatus.RUNNING });
    expect(startedAt).toHaveLength(1);
    // Never before the live owner's lease (plus the allowance) was over.
    expect(startedAt[0]!).toBeGreaterThan(leaseUntil + allowance);
  });
});
