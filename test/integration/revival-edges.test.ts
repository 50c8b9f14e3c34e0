/**
 * Item shapes one transition leaves that a later one trips over, on the
 * operator paths (resolve, retry) and at the edge of a run's fencing range.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerOps } from '../../shared/store/repairs.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_CLAIMS_PER_SLOT, claimsOf, initialFence } from '../../shared/core/fence.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { ReconcileOutcome, type JobHandler } from '../../shared/handler-api.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { retryRuns } from '../../shared/operations/retry.js';
import { testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { opsSandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const LEASE = 30_000;

describe('revival and fence-range edges', () => {
  let box: Sandbox;
  let ops: LedgerOps;
  beforeAll(async () => {
    ({ box, ops } = await opsSandbox());
  });
  afterAll(() => box.destroy());

  function setup(extra: Record<string, unknown> = {}) {
    const name = `rv-${Math.random().toString(36).slice(2, 8)}`;
    const calls = { run: 0, reconcile: 0 };
    const handler: JobHandler = {
      async run() {
        calls.run++;
      },
      async reconcile() {
        calls.reconcile++;
        return { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { found: true } };
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s', ...extra }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    return { name, calls, lab: new Lab(box, jobs, { h: handler }, now), slot: now - MIN };
  }

  it('resolve --as dead of a RUNNING run whose worker vanished, then ops retry: the revived run reconciles first (its last result is unknown), it does not run again', async () => {
    const { name, calls, lab, slot } = setup();
    await lab.create(name, slot);
    // A worker claims the run, starts the effect, and vanishes (no outcome recorded).
    const claim = await box.ledger.claim(lab.id(name, slot), 'vanished', lab.clock.now, LEASE, 2_000);
    expect(claim.kind).toBe('claimed');
    lab.clock.advance(LEASE + 2 * MIN);
    await resolveRun(
      { ledger: box.ledger, ops, clock: lab.clock.read },
      { id: lab.id(name, slot), as: 'dead', reason: 'worker gone', by: 'op' },
    );
    const resolved = (await lab.run(name, slot))!;
    expect(resolved.status).toBe(RunStatus.DEAD);
    const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [resolved]);
    await lab.deliverSent();
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    // The promise (README run states, ops-revival): a revival of a run whose last result is unknown
    // restarts UNKNOWN and reconciles before running again, as a worker's takeover of it would.
    expect({ to: entry?.to, ...calls }).toEqual({ to: RunStatus.UNKNOWN, run: 0, reconcile: 1 });
  });

  /**
   * Spends `claims` of a run's fencing range as a checkpointing job does over many invocations
   * (each claim yields with progress, its attempt refunded): two real claim-and-yield cycles, then
   * the item is moved to where the remaining ones would have left it (token, a RETRY due now), so
   * the test does not pay for 999 round trips.
   */
  async function spendFenceRange(lab: Lab, name: string, slot: number, claims: number): Promise<void> {
    for (let i = 0; i < 2; i++) {
      const claim = await box.ledger.claim(lab.id(name, slot), 'yielder', lab.clock.now, LEASE, 2_000);
      if (claim.kind !== 'claimed') throw new Error(`claim ${i + 1}: ${claim.kind}`);
      const done = await box.ledger.complete(
        claim.run,
        { status: RunStatus.RETRY, nextAttemptAt: lab.clock.now, lastError: { code: 'YIELDED', message: 'yielded' }, refundAttempt: true },
        lab.clock.now,
        { elapsedMs: 1 },
      );
      if (!done.ok) throw new Error(`yield ${i + 1} refused`);
      lab.clock.advance(1);
    }
    await box.clients.doc.send(
      new UpdateCommand({
        TableName: box.endpoints.ledgerTable,
        Key: box.ledger.runKeyOf(lab.id(name, slot)),
        UpdateExpression: 'SET fencingToken = :token',
        ConditionExpression: '#status = :retry',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':token': initialFence(slot) + claims, ':retry': RunStatus.RETRY },
      }),
    );
    expect(claimsOf((await lab.run(name, slot))!.fencingToken, slot)).toBe(claims);
  }

  it('a run whose last possible claim is held by a worker that dies ends DEAD FENCE_RANGE_EXHAUSTED with its result unknown, not RUNNING forever', async () => {
    const { name, lab, slot } = setup();
    await lab.create(name, slot);
    await spendFenceRange(lab, name, slot, MAX_CLAIMS_PER_SLOT - 1);
    // The last claim of the range: its worker dies mid-attempt.
    const last = await box.ledger.claim(lab.id(name, slot), 'dies', lab.clock.now, LEASE, 2_000);
    expect(last.kind).toBe('claimed');
    if (last.kind === 'claimed') expect(claimsOf(last.run.fencingToken, slot)).toBe(MAX_CLAIMS_PER_SLOT);
    lab.clock.advance(LEASE + MIN);
    // Its message comes back (SQS redelivery, or the sweeper's re-dispatch), again and again.
    for (let i = 0; i < 3; i++) {
      await lab.deliver(name, slot);
      lab.clock.advance(MIN);
    }
    const run = (await lab.run(name, slot))!;
    // Ended where everyone can see it, its result unknown (the holder may have applied its effect).
    expect(run).toMatchObject({ status: RunStatus.DEAD, resultUnknown: true, lastError: { code: 'FENCE_RANGE_EXHAUSTED' } });
    expect(run.leaseUntil).toBeUndefined();
  });

  it('ops retry of a DEAD run whose fencing range is spent is refused, saying why and pointing to ops trigger (it could never run)', async () => {
    const { name, calls, lab, slot } = setup();
    await lab.create(name, slot);
    await spendFenceRange(lab, name, slot, MAX_CLAIMS_PER_SLOT);
    await lab.deliver(name, slot);
    const dead = (await lab.run(name, slot))!;
    expect(dead).toMatchObject({ status: RunStatus.DEAD, lastError: { code: 'FENCE_RANGE_EXHAUSTED' } });
    // README "Run states": DEAD ... a fencing range spent (FENCE_RANGE_EXHAUSTED) → fix the cause, then `ops retry`.
    const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [dead]);
    // Refused with the reason, pointing to what can still do the work; nothing was sent or changed.
    expect(entry).toMatchObject({ action: 'refused', detail: expect.stringMatching(/fencing range is spent.*ops trigger/) });
    expect(lab.queue.take()).toEqual([]);
    expect((await lab.run(name, slot))!).toMatchObject({ status: RunStatus.DEAD, fencingToken: dead.fencingToken });
    expect(calls.run).toBe(0);
  });

  it('ops retry of a run that went DEAD past its deadline runs it: the deadline of a revived run counts from its revival', async () => {
    const { name, calls, lab, slot } = setup({ deadline: '2m' });
    await lab.create(name, slot);
    // Its message came late (a long outage): the deadline had passed before it ever started.
    lab.clock.advance(5 * MIN);
    await lab.deliver(name, slot);
    const dead = (await lab.run(name, slot))!;
    expect(dead).toMatchObject({ status: RunStatus.DEAD, lastError: { code: 'DEADLINE_BEFORE_START' } });
    const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [dead]);
    expect(entry?.action).toBe('revived');
    await lab.deliverSent();
    expect((await lab.run(name, slot))!.status).toBe(RunStatus.SUCCEEDED);
    expect(calls.run).toBe(1);
  });
});
