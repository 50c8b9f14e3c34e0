/**
 * `ops show <runKey>`'s run history against the local stack, through the ledger's real claims
 * and outcomes: every attempt (claim time, owner, fence, how it ended, error, duration), a claim
 * whose worker died before recording shown as taken over, the current claim of a RUNNING run as
 * running, an operator's takeover as such; and no stale lastError on a run that succeeded.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialFence } from '../../shared/core/fence.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 3, 2, 9, 0);
const JOBS = testJobs([{ name: 'ledger-sync', schedule: '* * * * *', handler: 'noop', retry: { maxAttempts: 5 } }]);
const LEASE = 10 * SEC;
const SKEW = 2 * SEC;

interface Attempt {
  claim: number;
  end: string;
  ended: string;
  token?: number;
  owner?: string;
  from?: string;
  claimedAt?: string;
  outcome?: string;
  code?: string;
  message?: string;
  durationMs?: number;
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = {
    stdout: (l) => out.push(l),
    stderr: (l) => err.push(l),
    now: () => T0 + 10 * MINUTE,
    jobs: JOBS,
    env: { USER: 'ops-person' },
  };
  return { io, out, err, json: () => JSON.parse(out.join('\n')) as Record<string, unknown> & { attempts: Attempt[] } };
}

describe('ops show: the run history', () => {
  let box: Sandbox;
  let endpoints: string;
  const id = (slot: number): RunId => ({ job: 'ledger-sync', slot, shard: 0 });
  const key = (slot: number) => runKeyOf('ledger-sync', slot, 0, 1);

  async function claim(slot: number, owner: string, at: number): Promise<Run> {
    const c = await box.ledger.claim(id(slot), owner, at, LEASE, SKEW);
    if (c.kind !== 'claimed') throw new Error(`claim by ${owner} at ${at}: ${c.kind}`);
    return c.run;
  }

  async function show(slot: number) {
    const json = capture();
    expect(await runOps(['show', key(slot), '--endpoints', endpoints, '--json'], json.io)).toBe(0);
    const table = capture();
    expect(await runOps(['show', key(slot), '--endpoints', endpoints], table.io)).toBe(0);
    return { item: json.json(), text: table.out.join('\n') };
  }

  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-show-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
  });
  afterAll(() => box.destroy());

  it('retry, a worker that died before recording, a takeover that succeeded: three rows, the middle one taken over, no stale lastError', async () => {
    const slot = T0;
    await box.ledger.createRun({ job: 'ledger-sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    // Claim 1 fails and retries.
    const first = await claim(slot, 'worker-a', slot + 100);
    expect(
      await box.ledger.complete(
        first,
        { status: RunStatus.RETRY, nextAttemptAt: slot + 2 * SEC, lastError: { code: 'UPSTREAM_503', message: 'bank API unavailable' } },
        slot + 1_600,
        { from: RunStatus.READY },
      ),
    ).toEqual({ ok: true });
    // Claim 2 dies without recording anything; claim 3 takes the run over once its lease expired.
    await claim(slot, 'worker-b', slot + 3 * SEC);
    const third = await claim(slot, 'worker-c', slot + 3 * SEC + LEASE + SKEW + 1);
    expect(third.fencingToken).toBe(initialFence(slot) + 3);
    expect(
      await box.ledger.complete(third, { status: RunStatus.SUCCEEDED, evidence: { synced: 3 } }, third.startedAt! + 420, {
        from: RunStatus.RUNNING,
      }),
    ).toEqual({ ok: true });

    const { item, text } = await show(slot);
    expect(item.status).toBe('SUCCEEDED');
    expect(item).not.toHaveProperty('lastError');
    expect(item.attempts).toEqual([
      expect.objectContaining({
        claim: 1,
        end: 'recorded',
        ended: 'RETRY',
        owner: 'worker-a',
        token: initialFence(slot) + 1,
        from: 'READY',
        claimedAt: new Date(slot + 100).toISOString(),
        code: 'UPSTREAM_503',
        message: 'bank API unavailable',
        durationMs: 1_500,
      }),
      expect.objectContaining({ claim: 2, end: 'taken-over', ended: 'no outcome recorded (taken over)', token: initialFence(slot) + 2 }),
      expect.objectContaining({ claim: 3, end: 'recorded', ended: 'SUCCEEDED', owner: 'worker-c', from: 'RUNNING', durationMs: 420 }),
    ]);
    expect(item.attempts[1]!.code).toBeUndefined();
    expect(item.attempts[2]!.code).toBeUndefined();

    // The table: the run's fields (no lastError), then the attempts.
    expect(text).toMatch(/status\s+SUCCEEDED/);
    expect(text).not.toMatch(/^lastError/m);
    expect(text).toMatch(/^CLAIM\s+CLAIMED AT\s+OWNER\s+FENCE\s+FROM\s+ENDED\s+ERROR\s+DURATION\s+RECONCILE\s+FENCED OUT$/m);
    expect(text).toMatch(
      /^1\s+2026-04-02T09:00:00\.100Z\s+worker-a\s+\d+001\s+READY\s+RETRY\s+UPSTREAM_503: bank API unavailable\s+1s\s+-\s+-$/m,
    );
    expect(text).toMatch(/^2\s+-\s+-\s+\d+002\s+-\s+no outcome recorded \(taken over\)\s+-\s+-\s+-\s+-$/m);
    expect(text).toMatch(/^3\s+\S+\s+worker-c\s+\d+003\s+RUNNING \(takeover\)\s+SUCCEEDED\s+-\s+420ms\s+-\s+-$/m);
  });

  it("an item that succeeded while it still carried an earlier attempt's lastError (written before the ledger cleared it) shows none", async () => {
    const slot = T0 + MINUTE;
    await box.ledger.createRun({ job: 'ledger-sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    const run = await claim(slot, 'worker-a', slot + 100);
    await box.ledger.complete(run, { status: RunStatus.SUCCEEDED }, slot + 900, { from: RunStatus.READY });
    await box.clients.doc.send(
      new UpdateCommand({
        TableName: box.endpoints.ledgerTable,
        Key: { pk: LedgerKeys.jobPk('ledger-sync'), sk: LedgerKeys.runSk(slot, 0) },
        UpdateExpression: 'SET lastError = :e',
        ExpressionAttributeValues: { ':e': { code: 'TIMEOUT', message: 'attempt 1 timed out' } },
      }),
    );
    const { item, text } = await show(slot);
    expect(item).not.toHaveProperty('lastError');
    expect(text).not.toContain('TIMEOUT');
    // runs' LAST ERROR column agrees.
    const runs = capture();
    expect(await runOps(['runs', '--job', 'ledger-sync', '--endpoints', endpoints], runs.io)).toBe(0);
    expect(runs.out.join('\n')).not.toContain('TIMEOUT');
  });

  it('a RUNNING run lists its current claim as running; a DEAD run keeps its lastError', async () => {
    const slot = T0 + 2 * MINUTE;
    await box.ledger.createRun({ job: 'ledger-sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    const first = await claim(slot, 'worker-a', slot + 100);
    await box.ledger.complete(
      first,
      { status: RunStatus.RETRY, nextAttemptAt: slot + SEC, lastError: { code: 'E1', message: 'first' } },
      slot + 300,
      { from: RunStatus.READY },
    );
    await claim(slot, 'worker-b', slot + 2 * SEC);
    const running = await show(slot);
    expect(running.item.attempts.map((a) => [a.claim, a.end, a.owner])).toEqual([
      [1, 'recorded', 'worker-a'],
      [2, 'running', 'worker-b'],
    ]);
    expect(running.item.lastError).toEqual({ code: 'E1', message: 'first' });

    const dead = T0 + 3 * MINUTE;
    await box.ledger.createRun({ job: 'ledger-sync', slot: dead, shard: 0, shards: 1, status: RunStatus.READY }, dead - SEC);
    const run = await claim(dead, 'worker-a', dead + 100);
    await box.ledger.complete(run, { status: RunStatus.DEAD, lastError: { code: 'PERMANENT', message: 'bad input' } }, dead + 300, {
      from: RunStatus.READY,
    });
    const shown = await show(dead);
    expect(shown.item.lastError).toEqual({ code: 'PERMANENT', message: 'bad input' });
    expect(shown.text).toMatch(/^lastError\s+.*"PERMANENT"/m);
  });

  it("resolving a RUNNING run whose worker vanished: the worker's claim taken over, the fence advance the operator's", async () => {
    const slot = T0 + 4 * MINUTE;
    await box.ledger.createRun({ job: 'ledger-sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    await claim(slot, 'worker-a', slot + 100);
    const c = capture();
    expect(
      await runOps(['resolve', key(slot), '--as', 'dead', '--reason', 'worker gone', '--endpoints', endpoints], c.io),
      c.err.join('\n'),
    ).toBe(0);
    const { item, text } = await show(slot);
    expect(item.attempts.map((a) => a.end)).toEqual(['taken-over', 'ops-takeover']);
    expect(text).toContain('fence advanced by an operator (takeover)');
  });

  it('a run never claimed says so', async () => {
    const slot = T0 + 5 * MINUTE;
    await box.ledger.createRun({ job: 'ledger-sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    const { item, text } = await show(slot);
    expect(item.attempts).toEqual([]);
    expect(text).toContain('attempts: none (never claimed)');
  });
});
