/**
 * Claims, takeovers and stale owners against DynamoDB Local: the lease and fencing rules of
 * DESIGN §6 hold under real conditional writes, not just in the adapter's mapping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { initialFence } from '../../shared/core/fence.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SLOT = Date.UTC(2026, 10, 29, 12, 1, 0);
const LEASE = 30_000;
const SKEW = 2_000;

describe('lease and fencing on the ledger', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('ten workers racing to claim one run: exactly one wins, the rest see a live lease', async () => {
    const id = { job: 'race', slot: SLOT, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, SLOT - 1_000);
    const now = SLOT;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => box.ledger.claim(id, `worker-${i}`, now, LEASE, SKEW)));
    const winners = results.filter((r) => r.kind === 'claimed');
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'leased')).toHaveLength(9);
    const winner = winners[0]!;
    if (winner.kind !== 'claimed') throw new Error('unreachable');
    expect(winner.run.fencingToken).toBe(initialFence(SLOT) + 1);
    expect(winner.run.attempt).toBe(1);
    expect(winner.claimedFrom).toBe(RunStatus.READY);

    // Still inside lease + clock allowance: no takeover.
    const early = await box.ledger.claim(id, 'late-worker', now + LEASE + SKEW - 1, LEASE, SKEW);
    expect(early.kind).toBe('leased');

    // After expiry: a takeover with a strictly larger token.
    const takeover = await box.ledger.claim(id, 'successor', now + LEASE + SKEW + 1, LEASE, SKEW);
    expect(takeover.kind).toBe('claimed');
    if (takeover.kind !== 'claimed') throw new Error('unreachable');
    expect(takeover.claimedFrom).toBe(RunStatus.RUNNING);
    expect(takeover.run.fencingToken).toBeGreaterThan(winner.run.fencingToken);
    expect(takeover.run.owner).toBe('successor');
  });

  it('completion, heartbeat and checkpoint by a stale owner or token are rejected and change nothing', async () => {
    const id = { job: 'stale', slot: SLOT, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, SLOT - 1_000);
    const first = await box.ledger.claim(id, 'A', SLOT, LEASE, SKEW);
    if (first.kind !== 'claimed') throw new Error('expected claim');
    const second = await box.ledger.claim(id, 'B', SLOT + LEASE + SKEW + 1, LEASE, SKEW);
    if (second.kind !== 'claimed') throw new Error('expected takeover');
    const before = await box.ledger.getRun(id);

    const staleComplete = await box.ledger.complete(first.run, { status: RunStatus.SUCCEEDED, evidence: 'stale' }, SLOT + 40_000);
    expect(staleComplete.ok).toBe(false);
    if (!staleComplete.ok) expect(staleComplete.current?.owner).toBe('B');
    // Right owner name but an old token (e.g. a reused worker id) is just as stale.
    const wrongToken = await box.ledger.complete(
      { ...second.run, fencingToken: first.run.fencingToken },
      { status: RunStatus.SUCCEEDED },
      SLOT + 40_000,
    );
    expect(wrongToken.ok).toBe(false);
    expect((await box.ledger.heartbeat(first.run, SLOT + 100_000)).ok).toBe(false);
    expect((await box.ledger.checkpoint(first.run, { cursor: 'stale' })).ok).toBe(false);
    expect(await box.ledger.getRun(id)).toEqual(before);

    // The holder still completes.
    expect((await box.ledger.complete(second.run, { status: RunStatus.SUCCEEDED }, SLOT + 41_000)).ok).toBe(true);
    const after = await box.ledger.getRun(id);
    expect(after?.status).toBe(RunStatus.SUCCEEDED);
    // And a finished run cannot be claimed again.
    expect((await box.ledger.claim(id, 'C', SLOT + 200_000, LEASE, SKEW)).kind).toBe('terminal');
  });

  it('a later slot always carries a larger token than any claim of an earlier slot', async () => {
    const early = { job: 'fence', slot: SLOT, shard: 0 };
    const later = { job: 'fence', slot: SLOT + 60_000, shard: 0 };
    await box.ledger.createRun({ ...early, shards: 1, status: RunStatus.READY }, SLOT);
    await box.ledger.createRun({ ...later, shards: 1, status: RunStatus.READY }, SLOT);
    let token = 0;
    let now = SLOT;
    for (let takeovers = 0; takeovers < 5; takeovers++) {
      const claim = await box.ledger.claim(early, `w${takeovers}`, now, LEASE, SKEW);
      if (claim.kind !== 'claimed') throw new Error(`expected claim ${takeovers}`);
      expect(claim.run.fencingToken).toBeGreaterThan(token);
      token = claim.run.fencingToken;
      now += LEASE + SKEW + 1;
    }
    const next = await box.ledger.claim(later, 'x', now, LEASE, SKEW);
    if (next.kind !== 'claimed') throw new Error('expected claim');
    expect(next.run.fencingToken).toBeGreaterThan(token);
  });
});
