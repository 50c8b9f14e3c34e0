/**
 * Overlap policies with a job whose runs outlast its period (every second, runs of 1.6 s),
 * through the real pipeline: planner → ledger → SQS → pollers → worker.
 */
import { describe, expect, it } from 'vitest';
import { isTerminal, RunStatus } from '../../../shared/core/vocabulary.js';
import type { JobHandler } from '../../../shared/handler-api.js';
import { LocalRuntime } from '../../../tools/local-runtime.js';
import { testJobs, waitFor } from '../../support/helpers.js';
import { sandbox } from '../../support/stack.js';

interface Execution {
  readonly slot: number;
  readonly start: number;
  end?: number;
}

async function runPolicy(overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce' | 'parallel') {
  const box = await sandbox();
  const executions: Execution[] = [];
  let active = 0;
  let maxActive = 0;
  const slow: JobHandler = {
    async run(ctx) {
      const execution: Execution = { slot: ctx.slot, start: Date.now() };
      executions.push(execution);
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 1_600));
      active--;
      execution.end = Date.now();
    },
  };
  const jobs = testJobs([{ name: 'slow', schedule: '* * * * * *', handler: 'slow', overlap, lease: '10s', startLead: '1s' }], ['slow']);
  const runtime = new LocalRuntime({ endpoints: box.endpoints, jobs, handlers: { slow }, workers: 3, planner: { lookaheadMs: 5_000 } });
  runtime.start();
  await runtime.tick();
  const runs = await waitFor(
    async () => {
      const all = await box.ledger.listRuns('slow', { ascending: true });
      return all.length > 0 && all.every((r) => isTerminal(r.status)) ? all : undefined;
    },
    45_000,
    `every ${overlap} run to settle`,
  );
  await runtime.stop();
  box.destroy();
  return { runs, executions, maxActive, violations: runtime.violations };
}

describe.concurrent('overlap policies with runs longer than the period', () => {
  it('parallel runs every slot, concurrently', async () => {
    const { runs, maxActive, violations } = await runPolicy('parallel');
    expect(runs.length).toBeGreaterThanOrEqual(5);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED)).toBe(true);
    expect(maxActive).toBeGreaterThan(1);
    expect(violations).toEqual([]);
  });

  it('forbid-skip never overlaps and marks slots that found an open run SKIPPED', async () => {
    const { runs, executions, maxActive, violations } = await runPolicy('forbid-skip');
    expect(maxActive).toBe(1);
    const skipped = runs.filter((r) => r.status === RunStatus.SKIPPED);
    expect(skipped.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED || r.status === RunStatus.SKIPPED)).toBe(true);
    expect(executions.length).toBe(runs.filter((r) => r.status === RunStatus.SUCCEEDED).length);
    expect(violations).toEqual([]);
  });

  it('forbid-queue runs every slot one at a time, in slot order', async () => {
    const { runs, executions, maxActive, violations } = await runPolicy('forbid-queue');
    expect(maxActive).toBe(1);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED)).toBe(true);
    expect(executions.map((e) => e.slot)).toEqual(runs.map((r) => r.slot));
    for (let i = 1; i < executions.length; i++) expect(executions[i]!.start).toBeGreaterThanOrEqual(executions[i - 1]!.end!);
    expect(violations).toEqual([]);
  });

  it('coalesce runs only the newest waiting slot and supersedes the older ones', async () => {
    const { runs, executions, maxActive, violations } = await runPolicy('coalesce');
    expect(maxActive).toBe(1);
    const superseded = runs.filter((r) => r.status === RunStatus.SUPERSEDED);
    expect(superseded.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED || r.status === RunStatus.SUPERSEDED)).toBe(true);
    // Executed slots only move forward, and the newest slot always runs.
    const slots = executions.map((e) => e.slot);
    expect([...slots].sort((a, b) => a - b)).toEqual(slots);
    expect(slots.at(-1)).toBe(runs.at(-1)!.slot);
    expect(violations).toEqual([]);
  });
});
