/**
 * What the console's Jobs page reads, counted on DynamoDB Local (SDK middleware, not estimates):
 * the planner's state of the shown jobs in two batch reads and one summary query per shown job,
 * never a job it does not show; the summaries carry what a full read would (run key, status, last
 * error); and the state filter pages through bounded jobs without reading past the page it fills.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEADLINE_BEFORE_START, type RunError, type Transition } from '../../shared/core/outcome.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { RunStatus, type RunId } from '../../shared/core/vocabulary.js';
import { failureStreak, JOBS_PER_PAGE, readJobsPage, ROW_RUNS_READ } from '../../tools/console/jobs-rows.js';
import { openTarget, type Target } from '../../tools/ops/target.js';
import { CountingMiddleware } from '../support/counting.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const NOW = Date.UTC(2026, 11, 1, 12, 0, 30);
const pad = (n: number) => String(n).padStart(3, '0');
/** 60 every-5-minutes jobs: more than a page. */
const PERIODIC = Array.from({ length: 60 }, (_, i) => `j-${pad(i)}`);
/** 120 one-time jobs whose slot has passed: the even ones' run ended (finished), the odd ones' is still READY. */
const ONCE = Array.from({ length: 120 }, (_, i) => `once-${pad(i)}`);
const ONCE_AT = NOW - 2 * HOUR;
const JOBS = testJobs([
  ...PERIODIC.map((name) => ({ name, schedule: '*/5 * * * *', handler: 'noop' })),
  ...ONCE.map((name) => ({ name, schedule: { at: new Date(ONCE_AT).toISOString() }, handler: 'noop' })),
]);

describe("the console's Jobs page reads", () => {
  let box: Sandbox;
  let target: Target;
  const counting = new CountingMiddleware();
  /** The partition keys the Query requests asked for, in order. */
  let queried: string[] = [];

  /** Claims `id` and records how it ended (`lastError`: a DEAD run's error; none: it succeeded). */
  async function ended(id: RunId, lastError?: RunError): Promise<void> {
    const claimed = await box.ledger.claim(id, 'worker', id.slot + 100, 10 * SEC, 2 * SEC);
    if (claimed.kind !== 'claimed') throw new Error(`claim of ${id.job}: ${claimed.kind}`);
    const outcome: Transition = lastError ? { status: RunStatus.DEAD, lastError } : { status: RunStatus.SUCCEEDED };
    await box.ledger.complete(claimed.run, outcome, id.slot + 900, { from: RunStatus.READY });
  }

  beforeAll(async () => {
    box = await sandbox();
    const endpoints = join(mkdtempSync(join(tmpdir(), 'console-reads-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    // Each periodic job: 4 runs, newest first DEAD (failure), DEAD before its start (no failure), DEAD (failure), SUCCEEDED.
    for (const job of PERIODIC.slice(0, 52)) {
      const slots = [1, 2, 3, 4].map((k) => NOW - 30 * SEC - k * 5 * MIN);
      for (const slot of slots) await box.ledger.createRun({ job, slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
      const id = (slot: number): RunId => ({ job, slot, shard: 0 });
      await ended(id(slots[0]!), { code: 'BANK_DOWN', message: 'refused' });
      await ended(id(slots[1]!), { code: DEADLINE_BEFORE_START, message: 'too late' });
      await ended(id(slots[2]!), { code: 'BANK_DOWN', message: 'refused' });
      await ended(id(slots[3]!));
    }
    for (const [i, job] of ONCE.entries()) {
      await box.ledger.createRun({ job, slot: ONCE_AT, shard: 0, shards: 1, status: RunStatus.READY }, ONCE_AT - SEC);
      if (i % 2 === 0) await ended({ job, slot: ONCE_AT, shard: 0 });
    }
    target = await openTarget({ endpoints, json: false, local: false, help: false }, { stdout: () => undefined, stderr: () => undefined });
    counting.attach(target.clients.doc);
    target.clients.doc.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
        if (context.commandName === 'QueryCommand') queried.push(String(input.ExpressionAttributeValues?.[':pk']));
        return next(args);
      },
      { step: 'initialize', name: 'console-reads-queried' },
    );
  }, 180_000);

  afterAll(() => {
    target?.destroy();
    box?.destroy();
  });

  const reset = () => {
    counting.reset();
    queried = [];
  };

  it('a page of 50 jobs is two batch reads and one query per shown job, and never a job past the page', async () => {
    reset();
    const page = await readJobsPage(target, JOBS, { name: 'j-' }, NOW);
    expect(page.rows.map((r) => r.job.name)).toEqual(PERIODIC.slice(0, JOBS_PER_PAGE));
    expect(page.next).toBe(PERIODIC[JOBS_PER_PAGE - 1]);
    expect(counting.byCommand()).toEqual({ BatchGetItemCommand: 2, QueryCommand: JOBS_PER_PAGE });
    expect(new Set(queried)).toEqual(new Set(PERIODIC.slice(0, JOBS_PER_PAGE).map(LedgerKeys.jobPk)));
  });

  it('the summaries a row is drawn from carry what a full read would: last run, streak past a run that never started, DEAD counts', async () => {
    const page = await readJobsPage(target, JOBS, { name: 'j-' }, NOW);
    for (const row of page.rows) {
      const full = await target.ops.queryRuns(row.job.name, { untilSlot: NOW + 1, limit: ROW_RUNS_READ });
      expect(row.lastRun).toEqual({
        slot: full[0]!.slot,
        shard: 0,
        runKey: full[0]!.runKey,
        status: full[0]!.status,
        lastError: full[0]!.lastError,
      });
      expect(row.streak).toEqual(failureStreak(full, full.length < ROW_RUNS_READ));
      // The DEAD run that never started neither counts nor ends the streak.
      expect(row.streak).toEqual({ count: 2, atLeast: false });
      expect(row.dead24h).toBe(3);
      expect(row.open).toBe(0);
    }
    const summaries = await target.ops.runSummaries(PERIODIC[0]!, { untilSlot: NOW + 1, limit: 2 });
    expect(summaries.map((s) => s.status)).toEqual([RunStatus.DEAD, RunStatus.DEAD]);
    expect(summaries[1]!.lastError?.code).toBe(DEADLINE_BEFORE_START);
  });

  it('the state filter reads the bounded jobs a page-full at a time: each page holds only finished jobs, and nothing past it is read', async () => {
    reset();
    const first = await readJobsPage(target, JOBS, { state: 'finished' }, NOW);
    const finished = ONCE.filter((_, i) => i % 2 === 0);
    expect(first.rows.map((r) => r.job.name)).toEqual(finished.slice(0, JOBS_PER_PAGE));
    expect(first.rows.every((r) => r.state === 'finished' && r.nextFires.length === 0)).toBe(true);
    expect(first.next).toBe(finished[JOBS_PER_PAGE - 1]);
    const shownLast = LedgerKeys.jobPk(first.next!);
    expect(queried.filter((pk) => pk > shownLast)).toEqual([]);

    const second = await readJobsPage(target, JOBS, { state: 'finished', after: first.next }, NOW);
    expect(second.rows.map((r) => r.job.name)).toEqual(finished.slice(JOBS_PER_PAGE));
    expect(second.next).toBeUndefined();

    const active = await readJobsPage(target, JOBS, { state: 'active', name: 'once-' }, NOW);
    expect(active.rows.map((r) => r.job.name)).toEqual(ONCE.filter((_, i) => i % 2 === 1).slice(0, JOBS_PER_PAGE));
  });
});
