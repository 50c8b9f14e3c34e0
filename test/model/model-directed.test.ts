/**
 * The directed scenarios of the model tester's proof (tools/model/directed.ts), one per defect
 * class of the correctness review, against the fixed code: each keeps every invariant here (in
 * its defect's patched tree, `npm run chaos -- --model --prove` shows it trips its class). And
 * every defect patch still applies to the code, so the proof searches for a defect that exists.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatViolations } from '../../tools/verify/checker.js';
import { DIRECTED, runDirected, type DirectedScenario } from '../../tools/model/directed.js';
import { DEFECT_CLASSES } from '../../tools/model/prove.js';
import { FaultKind } from '../../tools/model/faults.js';
import { BehaviourKind } from '../../tools/model/handlers.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { modelStack } from '../../tools/model/world.js';
import { sharedEndpoints } from '../support/stack.js';

const MINUTE = 60_000;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs one directed scenario on the shared local stack (its own tables and queues). */
async function runOnSharedStack(scenario: DirectedScenario) {
  const stack = modelStack(sharedEndpoints());
  try {
    return await runDirected(stack, scenario);
  } finally {
    stack.clients.dynamo.destroy();
    stack.clients.sqs.destroy();
  }
}

describe('model tester: directed scenarios of the defect classes', () => {
  it.each(Object.entries(DIRECTED).map(([defect, scenario]) => ({ defect, title: scenario.title, scenario })))(
    'defect $defect, $title: no violation in the fixed code',
    async ({ scenario }) => {
      const { violations, story } = await runOnSharedStack(scenario);
      expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
    },
    300_000,
  );

  it('an ops retry whose revival committed but whose message send failed is recorded as a repair, as `ops status` shows it (model seed 20284962: a false alarm of fenced-out-superseded)', async () => {
    // Before: the model recorded an operator's repair only when the ops call returned, so the
    // revived run's later end (DEAD past its deadline) was judged against its earlier fenced-out write.
    const { violations, story } = await runOnSharedStack({
      title: 'a DEAD run revived by an ops retry whose send is refused',
      jobs: [{ maxAttempts: 1, behaviours: [{ kind: BehaviourKind.PERMANENT, workMs: 100, writes: 0 }] }],
      steps: [
        { step: 'run', ms: 150_000 },
        { step: 'arm-ops', kind: 'sqs-send', fault: FaultKind.REFUSED, count: 10 },
        { step: 'retry', prefer: RunStatus.DEAD },
        { step: 'run', ms: 30_000 },
      ],
    });
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
    expect(story).toMatch(/ops retry \S+: DEAD → READY \(seen by ops status after the call failed\)/);
  }, 300_000);

  it('a job added after a tick whose watermark write landed but whose response was lost on every attempt is owed from that watermark on, as the planner plans it (model seed 20269131: a false alarm of no-lost-slot)', async () => {
    // Before: the model took the failed tick for one that planned nothing, owed the new job's
    // slots from the next tick's `now`, and flagged those the planner had rightly passed.
    const { violations, story } = await runOnSharedStack({
      title: 'a watermark write whose response is lost on every SDK attempt, then a job added',
      jobs: [{}],
      steps: [
        { step: 'tick' },
        { step: 'advance', ms: 60_000 },
        { step: 'arm-planner', kind: 'planner-state', fault: FaultKind.LOST_RESPONSE, count: 3 },
        { step: 'tick' },
        { step: 'add', job: { schedule: '*/15 * * * * *' } },
        { step: 'advance', ms: 5_000 },
        { step: 'tick' },
        { step: 'run', ms: 2 * 60_000 },
      ],
    });
    expect(story).toMatch(/tick 0\/1 failed: .*UpdateItem/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it('a forbid-queue backlog of 120 backfilled runs drains within quiescence: a hand-on sent while the world settles is delivered at once, not at the next tick (model seed 20269131: a false alarm of no-lost-slot)', async () => {
    // Before: the harness saw a message sent while settling only at its next pull, after time had
    // moved on to the next tick, so the lane handed on one run a minute and quiescence ended with
    // most of the backlog READY.
    const { violations, story } = await runOnSharedStack({
      title: 'two hours of a forbid-queue job backfilled, every run past its deadline',
      jobs: [{ overlap: 'forbid-queue', deadlineMs: 300_000 }],
      steps: [{ step: 'backfill', job: 0, agoMs: 600_000, spanMs: 2 * 3_600_000 }],
    });
    expect(story).toMatch(/ops backfill j0 .*: 120 created/);
    expect(story).toMatch(/— settled after \d+ s —/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it("a bulk add of 120 hourly jobs rolled back after their runs were planned: the orphans stay open (reported, never run), the scenario's own job runs on, and the model owes nothing of the removed jobs", async () => {
    const { violations, story } = await runOnSharedStack({
      title: '120 hourly jobs added, planned for the hour, then rolled back',
      jobs: [{}],
      steps: [
        { step: 'many', count: 120 },
        { step: 'advance', ms: 59 * 60_000 },
        { step: 'tick' },
        { step: 'rollback-bulk' },
        { step: 'run', ms: 3 * 60_000 },
      ],
    });
    // The removed jobs' runs of 01:00 were planned before the rollback: their messages come back
    // (poison: no such job) and the runs stay open, which liveness must not count against anyone.
    expect(story).toMatch(/receives [^\n]*j120@2031-01-01T01:00:00\.000Z/);
    expect(story).toMatch(/config: 120 jobs added in bulk removed \(a rollback\)/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it('a job removed on its backlog alarm is the one with the most open runs: its 120 backfilled runs stay open as orphans (never run), the other job runs on, and the model owes nothing of the removed one', async () => {
    const { violations, story } = await runOnSharedStack({
      title: 'two hours of a forbid-queue job backfilled, the job removed while its backlog waits',
      jobs: [{ schedule: '*/5 * * * *' }, { overlap: 'forbid-queue', behaviours: [{ kind: BehaviourKind.OK, workMs: 3_000, writes: 1 }] }],
      steps: [
        { step: 'backfill', job: 1, agoMs: 600_000, spanMs: 2 * 3_600_000 },
        { step: 'run', ms: 30_000 },
        { step: 'remove-backlogged' },
        { step: 'run', ms: 5 * 60_000 },
      ],
    });
    expect(story).toMatch(/ops backfill j1 .*: 120 created/);
    const removed = /config: job (j\d) removed on its backlog alarm \((\d+) open run\(s\) left behind\)/.exec(story);
    expect(removed?.[1]).toBe('j1');
    expect(Number(removed?.[2])).toBeGreaterThan(100);
    // The job left in the config runs on after the removal.
    expect(story).toMatch(/records j0@2031-01-01T00:0[5-9]:00\.000Z SUCCEEDED/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it("a scenario that starts on 150 open runs an earlier deployment left (a removed job's backfill): they stay open, never run, and a later run whose message is lost is still found behind them", async () => {
    const { violations, story } = await runOnSharedStack({
      title: 'tables inherited with 150 orphans, then planner sends refused',
      jobs: [{ schedule: '*/5 * * * *' }],
      plannerSdkAttempts: 1,
      inheritedOrphans: 150,
      steps: [
        { step: 'arm-planner', kind: 'sqs-send', fault: FaultKind.REFUSED, count: 2 },
        { step: 'run', ms: 12 * MINUTE },
        { step: 'redrive' },
        { step: 'run', ms: 2 * MINUTE },
      ],
    });
    expect(story).toMatch(
      /config: job legacy removed by an earlier deployment with 150 open run\(s\) of a backfill left behind, their messages in the DLQ/,
    );
    // Their messages wait in the DLQ until the operator's redrive, then come back as poison (no
    // such job): delivered (when, in virtual time, depends on the real-time move task), never run.
    const redriven = story.indexOf('ops redrive: 150 message(s)');
    expect(redriven).toBeGreaterThan(0);
    expect(story.slice(0, redriven)).not.toMatch(/receives [^\n]*legacy@/);
    expect(story.slice(redriven)).toMatch(/receives [^\n]*legacy@/);
    expect(story).not.toMatch(/records legacy@/);
    // The tick of 00:04 planned j0@00:05 and its send was refused (the tick failed); no window
    // sweep re-sent it, so only the watch sweep, paging past the 150 older orphans, sends it again
    // (at 00:11, once it is overdue; it ends superseded by 00:10, which wrote the item first).
    expect(story).toMatch(/00:04:00 planner sqs-send \(SendMessageBatch\): refused/);
    expect(story).toMatch(/receives j0@2031-01-01T00:05:00\.000Z/);
    expect(story).toMatch(/records j0@2031-01-01T00:05:00\.000Z (SUCCEEDED|SUPERSEDED)/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it("an operator's `ops retry --job` revives every DEAD run of the job, those whose result is unknown to UNKNOWN (they reconcile first), and nothing runs twice unreconciled", async () => {
    const { violations, story } = await runOnSharedStack({
      title: 'a job whose every run ends DEAD with its result unknown, retried in bulk',
      jobs: [{ reconcile: true, maxAttempts: 1, behaviours: [{ kind: BehaviourKind.UNKNOWN, workMs: 200, writes: 0 }] }],
      steps: [
        { step: 'run', ms: 200_000 },
        { step: 'retry-job', job: 0 },
        { step: 'run', ms: 60_000 },
      ],
    });
    expect(story).toMatch(/ops retry --job j0: [2-9] DEAD run\(s\)/);
    expect(story.match(/ops retry j0@[^:]+:\d\d:\d\d\.000Z: DEAD → UNKNOWN/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it('an ops trigger whose key write fails exits non-zero having created nothing, and its repeat with the same idempotency key, whose send fails, exits 0 naming the one run the sweeper then sends (report-kept)', async () => {
    const { violations, story } = await runOnSharedStack({
      title: 'ops trigger with its key write refused on every SDK attempt, then its send refused',
      jobs: [{ schedule: '0 * * * *' }],
      steps: [
        { step: 'run', ms: 30_000 },
        { step: 'arm-ops', kind: 'other', fault: FaultKind.REFUSED, count: 3 },
        { step: 'arm-ops', kind: 'sqs-send', fault: FaultKind.REFUSED, count: 3 },
        { step: 'trigger', job: 0 },
        { step: 'run', ms: 4 * MINUTE },
      ],
    });
    expect(story).toMatch(/ops trigger j0 --idempotency-key \S+: exit 1 \(try 1 of 3\)/);
    expect(story).toMatch(/ops trigger j0 --idempotency-key \S+: exit 0, created j0@\S+ \(send failed/);
    expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
  }, 300_000);

  it('every defect patch applies to the code as it is (git apply --check)', () => {
    for (const defect of DEFECT_CLASSES) {
      const checked = spawnSync('git', ['apply', '--check', `tools/model/defects/${defect.patch}.patch`], { cwd: root, encoding: 'utf8' });
      expect(`${defect.patch}: ${checked.status === 0 ? 'applies' : checked.stderr.trim()}`).toBe(`${defect.patch}: applies`);
    }
  });

  it('every defect class has a directed scenario', () => {
    expect(DEFECT_CLASSES.map((d) => d.defect).filter((d) => !DIRECTED[d])).toEqual([]);
  });
});
