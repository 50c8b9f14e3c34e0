/**
 * `ops runs` across every configured job, and the one time format of `--json`, against the local
 * stack. The hazards: a DEAD run an operator never sees because `runs` needed a job name, or
 * because it sits behind a first page of big items that a status filter leaves empty; a `--limit`
 * note that claims more runs exist when none do (or none when some do); a script that must know
 * which command prints epoch milliseconds and which ISO strings.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerKeys } from '../../shared/core/resources.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
// Near the real time: an ended run's expiresAt is then in the future, so DynamoDB Local's TTL
// sweep never deletes the runs a test reads (a fixed date in the past would let it, at random).
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE;
const isoOf = (ms: number) => new Date(ms).toISOString();
/** Big enough that a 1 MB page of a query holds only a few runs. */
const BIG = 'x'.repeat(300_000);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const JOBS = testJobs([
  { name: 'alpha', schedule: '* * * * *', handler: 'noop' },
  { name: 'bulky', schedule: '* * * * *', handler: 'noop' },
  { name: 'quiet', schedule: '* * * * *', handler: 'noop' },
]);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, jobs: JOBS, env: { USER: 'tester' } };
  return { io, out, err, json: <T>() => JSON.parse(out.join('\n')) as T };
}

describe('ops runs across every job; one time format in --json', () => {
  let box: Sandbox;
  let endpoints: string;
  const alphaDead = NOW - 30 * MINUTE;
  const bulkyDead = NOW - 20 * MINUTE;
  /** bulky's newer runs: SUCCEEDED, each ~300 KB, so its DEAD run is past the query's first page. */
  const bulkyBig = Array.from({ length: 8 }, (_, i) => NOW - (10 - i) * MINUTE);

  async function end(job: string, slot: number, status: 'SUCCEEDED' | 'DEAD', big = false): Promise<void> {
    await box.ledger.createRun({ job, slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - 5_000);
    const claim = await box.ledger.claim({ job, slot, shard: 0 }, 'w-1', slot + 200, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await box.ledger.complete(
      claim.run,
      status === 'DEAD' ? { status: RunStatus.DEAD, lastError: { code: 'BOOM', message: 'gave up' } } : { status: RunStatus.SUCCEEDED },
      slot + 1_000,
    );
    if (big) {
      await box.clients.doc.send(
        new UpdateCommand({
          TableName: box.endpoints.ledgerTable,
          Key: box.ledger.runKeyOf({ job, slot, shard: 0 }),
          UpdateExpression: 'SET evidence = :big',
          ExpressionAttributeValues: { ':big': BIG },
        }),
      );
    }
  }

  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-runs-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    await end('alpha', alphaDead, 'DEAD');
    await end('alpha', NOW - 5 * MINUTE, 'SUCCEEDED');
    await end('bulky', bulkyDead, 'DEAD');
    for (const slot of bulkyBig) await end('bulky', slot, 'SUCCEEDED', true);
    await end('quiet', NOW - 2 * MINUTE, 'SUCCEEDED');
  }, 120_000);
  afterAll(() => box.destroy());

  it("the DEAD run sits behind a first page of big runs in its job's query (the premise of the next test)", async () => {
    const { Items = [], LastEvaluatedKey } = await box.clients.doc.send(
      new QueryCommand({
        TableName: box.endpoints.ledgerTable,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
        ExpressionAttributeValues: { ':pk': LedgerKeys.jobPk('bulky'), ':run': LedgerKeys.runSkPrefix },
        ScanIndexForward: false,
      }),
    );
    expect(Items.length).toBeGreaterThan(0);
    expect(Items.map((item) => item.status)).not.toContain(RunStatus.DEAD);
    expect(LastEvaluatedKey).toBeDefined();
  });

  it('runs --state DEAD without --job lists the DEAD runs of every configured job, newest first, the one past a first page included', async () => {
    const c = capture();
    expect(await runOps(['runs', '--state', 'DEAD', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.json<{ runKey: string }[]>().map((r) => r.runKey)).toEqual([
      runKeyOf('bulky', bulkyDead, 0, 1),
      runKeyOf('alpha', alphaDead, 0, 1),
    ]);

    const table = capture();
    expect(await runOps(['runs', '--state', 'dead', '--endpoints', endpoints], table.io)).toBe(0);
    expect(table.out[0]).toMatch(/^RUN KEY\s+STATUS/);
    expect(table.out.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([
      runKeyOf('bulky', bulkyDead, 0, 1),
      runKeyOf('alpha', alphaDead, 0, 1),
    ]);
    expect(table.out.join('\n')).not.toMatch(/more exist/);
  });

  it('every state works across jobs, and --limit says more exist only when more do', async () => {
    const succeeded = capture();
    expect(await runOps(['runs', '--state', 'SUCCEEDED', '--limit', '3', '--endpoints', endpoints, '--json'], succeeded.io)).toBe(0);
    expect(succeeded.json<{ runKey: string }[]>().map((r) => r.runKey)).toEqual([
      runKeyOf('quiet', NOW - 2 * MINUTE, 0, 1),
      runKeyOf('bulky', bulkyBig.at(-1)!, 0, 1),
      runKeyOf('bulky', bulkyBig.at(-2)!, 0, 1),
    ]);
    const cut = capture();
    expect(await runOps(['runs', '--state', 'SUCCEEDED', '--limit', '3', '--endpoints', endpoints], cut.io)).toBe(0);
    expect(cut.out.at(-1)).toBe('(the newest 3; more exist: --limit N, or narrow with --since/--until)');
    // Exactly as many as the limit: nothing more to announce.
    const exact = capture();
    expect(await runOps(['runs', '--state', 'DEAD', '--limit', '2', '--endpoints', endpoints], exact.io)).toBe(0);
    expect(exact.out, exact.out.join('\n')).toHaveLength(3);
    const none = capture();
    expect(await runOps(['runs', '--state', 'RETRY', '--endpoints', endpoints], none.io)).toBe(0);
    expect(none.out).toEqual(['no runs of any of the 3 configured job(s) in state RETRY']);
  });

  it('runs --json and show --json print every instant as an ISO-8601 UTC string, never epoch milliseconds (nested attempts included)', async () => {
    const runs = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--state', 'DEAD', '--endpoints', endpoints, '--json'], runs.io)).toBe(0);
    const [run] = runs.json<Record<string, unknown>[]>();
    expect(run).toMatchObject({
      slot: isoOf(alphaDead),
      createdAt: isoOf(alphaDead - 5_000),
      finishedAt: isoOf(alphaDead + 1_000),
      fencingToken: expect.any(Number),
    });
    expect(run!.expiresAt).toMatch(ISO);
    const attempts = run!.attempts as Record<string, unknown>[];
    expect(attempts[0]).toMatchObject({ claimedAt: isoOf(alphaDead + 200), endedAt: isoOf(alphaDead + 1_000) });

    const show = capture();
    expect(await runOps(['show', runKeyOf('alpha', alphaDead, 0, 1), '--endpoints', endpoints, '--json'], show.io)).toBe(0);
    const item = show.json<Record<string, unknown>>();
    for (const field of ['slot', 'createdAt', 'startedAt', 'finishedAt', 'expiresAt']) expect(item[field], field).toMatch(ISO);
    expect(item.slot).toBe(isoOf(alphaDead));

    // A revival's record: its `at` too.
    const retried = capture();
    expect(await runOps(['retry', runKeyOf('alpha', alphaDead, 0, 1), '--endpoints', endpoints], retried.io)).toBe(0);
    const after = capture();
    expect(await runOps(['show', runKeyOf('alpha', alphaDead, 0, 1), '--endpoints', endpoints, '--json'], after.io)).toBe(0);
    expect(after.json<{ lastRevival: { at: unknown; by: string } }>().lastRevival).toMatchObject({ at: isoOf(NOW), by: 'tester' });
    expect(after.json<{ dispatchedAt: unknown }>().dispatchedAt).toBe(isoOf(NOW));
  });
});
