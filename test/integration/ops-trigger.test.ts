/**
 * `ops trigger` through the CLI against the local stack: one manual run per shard (or one shard),
 * dispatched now, with its note and who triggered it; `ops runs` shows where each run came from;
 * bad input exits 2 naming the field and creates nothing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunOrigin, RunStatus } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { drain, testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { RecordingQueue } from '../support/lab.js';
import { trigger } from '../../shared/operations/trigger.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 30, 417);
const JOBS = testJobs([
  { name: 'report', schedule: '0 * * * *', handler: 'noop' },
  { name: 'sharded', schedule: '0 * * * *', handler: 'noop', shards: 3 },
]);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, jobs: JOBS, env: { USER: 'alice' } };
  return { io, out, err, json: <T>() => JSON.parse(out.join('\n')) as T };
}

describe('ops trigger', () => {
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-trigger-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    await box.ledger.createRun({ job: 'report', slot: Date.UTC(2026, 11, 1, 12), shard: 0, shards: 1, status: RunStatus.READY }, NOW);
  });
  afterAll(() => box.destroy());

  it('creates one manual run with its note and who triggered it, dispatches it, and `runs` shows its origin', async () => {
    const c = capture();
    expect(await runOps(['trigger', 'report', '--note', 'rerun after the feed was fixed', '--endpoints', endpoints, '--json'], c.io)).toBe(
      0,
    );
    const [run] = c.json<{ runKey: string; origin: string; note: string; triggeredBy: string }[]>();
    expect(run).toMatchObject({
      runKey: `report@${new Date(NOW).toISOString()}`,
      origin: RunOrigin.MANUAL,
      note: 'rerun after the feed was fixed',
      triggeredBy: 'alice',
    });
    const stored = await box.ledger.getRun({ job: 'report', slot: NOW, shard: 0 });
    expect(stored).toMatchObject({ status: RunStatus.READY, origin: RunOrigin.MANUAL });
    const received = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 1 });
    expect(received.map((m) => (JSON.parse(m.Body!) as { runKey: string }).runKey)).toEqual([run!.runKey]);

    const table = capture();
    expect(await runOps(['runs', '--job', 'report', '--endpoints', endpoints], table.io)).toBe(0);
    expect(table.out[0]).toMatch(/^RUN KEY\s+STATUS\s+ORIGIN\s+ATTEMPT/);
    expect(table.out.find((l) => l.startsWith(run!.runKey))).toMatch(/READY\s+manual by alice: rerun after the feed was fixed/);
    expect(table.out.find((l) => l.startsWith('report@2026-12-01T12:00:00.000Z'))).toMatch(/READY\s+planned\s/);
  });

  it('a sharded job gets one run per shard, or only --shard N', async () => {
    const all = capture();
    expect(await runOps(['trigger', 'sharded', '--by', 'bob', '--endpoints', endpoints], all.io)).toBe(0);
    expect(all.out.at(-1)).toBe('triggered 3 manual run(s) of sharded, dispatched now');
    const one = capture();
    expect(await runOps(['trigger', 'sharded', '--shard', '2', '--endpoints', endpoints, '--json'], one.io)).toBe(0);
    expect(one.json<{ shard: number }[]>().map((r) => r.shard)).toEqual([2]);
  });

  it.each([
    [['trigger', 'nope'], 'field "job"'],
    [['trigger', 'sharded', '--shard', '3'], 'field "shard": must be an integer in [0, 3) for job "sharded", got 3'],
    [['trigger', 'sharded', '--shard', 'two'], 'field "shard": must be a whole number, got "two"'],
    [['trigger', 'report', '--overlap', 'sometimes'], 'field "overlap": must be one of'],
  ])('%j exits 2 with one line naming the field, and creates nothing', async (args, message) => {
    const before = (await box.ledger.listRuns('sharded')).length + (await box.ledger.listRuns('report')).length;
    const c = capture();
    expect(await runOps([...args, '--endpoints', endpoints], c.io)).toBe(2);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toContain(message);
    expect((await box.ledger.listRuns('sharded')).length + (await box.ledger.listRuns('report')).length).toBe(before);
  });
});

describe('ops trigger across a change of shards', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('a trigger repeated with its idempotency key after shards changed 1 -> 3 finds its one run and adds no runs of the new count to that slot', async () => {
    const [one] = testJobs([{ name: 'reshard', schedule: '0 * * * *', handler: 'noop' }]);
    const [three] = testJobs([{ name: 'reshard', schedule: '0 * * * *', handler: 'noop', shards: 3 }]);
    const queue = new RecordingQueue();
    const first = await trigger({ ledger: box.ledger, queue, clock: () => NOW }, { job: one!, idempotencyKey: 'deploy-42', by: 'alice' });
    const again = await trigger(
      { ledger: box.ledger, queue, clock: () => NOW + 5_000 },
      { job: three!, idempotencyKey: 'deploy-42', by: 'alice' },
    );
    expect(again.runs.map((r) => r.runKey)).toEqual(first.runs.map((r) => r.runKey));
    expect(again.repeated).toBe(true);
    expect((await box.ledger.listRuns('reshard', { ascending: true })).map((r) => `${r.shard}/${r.shards}`)).toEqual(['0/1']);
  });
});
