/**
 * An operator command that revives or creates runs of an exclusive lane says what will happen to
 * them (DESIGN §8 "Lanes"): a revived run runs, or the command refuses it with the reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerOps } from '../../../shared/store/repairs.js';
import { backfill, BackfillRequestError } from '../../../shared/operations/backfill.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { retryRuns } from '../../../shared/operations/retry.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { opsSandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;

describe('operator revivals on exclusive lanes', () => {
  let box: Sandbox;
  let ops: LedgerOps;
  beforeAll(async () => {
    ({ box, ops } = await opsSandbox());
  });
  afterAll(() => box.destroy());

  for (const overlap of ['coalesce', 'replace'] as const) {
    it(`${overlap}: ops retry of a SUPERSEDED run is refused with the reason (a newer run exists, so it would be superseded again on arrival without running), not reported revived`, async () => {
      const name = uniqueName(`rv-${overlap}`);
      const m0 = Math.floor(Date.now() / MIN) * MIN - 10 * MIN;
      const ran: number[] = [];
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap }], ['h']);
      const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, m0 + MIN + 10);
      await lab.create(name, m0);
      await lab.create(name, m0 + MIN);
      // The newer slot is due: the older one's message finds it and gives way.
      expect(await lab.deliver(name, m0)).toBe('ack');
      expect(await lab.status(name, m0)).toBe(RunStatus.SUPERSEDED);
      expect(await lab.deliver(name, m0 + MIN)).toBe('ack');
      const [entry] = await retryRuns(
        { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
        lab.job(name),
        [(await lab.run(name, m0))!],
        { states: [RunStatus.SUPERSEDED] },
      );
      expect(entry).toMatchObject({ action: 'refused' });
      expect(entry!.detail).toContain(`${overlap}: a newer run`);
      expect(entry!.detail).toContain('ops trigger');
      expect(await lab.status(name, m0)).toBe(RunStatus.SUPERSEDED);
      expect(lab.queue.sent).toEqual([]);
      expect(ran).toEqual([m0 + MIN]);
    });

    it(`${overlap}: ops backfill is refused before it creates anything (every backfilled slot would be superseded without running)`, async () => {
      const name = uniqueName(`bf-${overlap}`);
      const now = Math.floor(Date.now() / MIN) * MIN;
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap }], ['h']);
      const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, now);
      const attempt = backfill(
        { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
        { job: lab.job(name), from: now - 10 * MIN, to: now - 5 * MIN },
      );
      await expect(attempt).rejects.toBeInstanceOf(BackfillRequestError);
      await expect(attempt).rejects.toThrow(`"${name}" is ${overlap}: only a lane's newest due run executes`);
      expect(await box.ledger.listRuns(name)).toEqual([]);
    });
  }

  it('forbid-skip: ops retry of a SKIPPED run while another run holds the lane is refused with the reason (it would be skipped again on arrival)', async () => {
    const name = uniqueName('rv-skip');
    const m0 = Math.floor(Date.now() / MIN) * MIN - 10 * MIN;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-skip' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, m0 + MIN + 10);
    await lab.create(name, m0);
    await lab.create(name, m0 + MIN);
    expect(await box.ledger.lanes.acquire(name, { slot: m0 + MIN, shard: 0 }, lab.clock.now)).toEqual({ kind: 'acquired' });
    expect(await lab.deliver(name, m0)).toBe('ack');
    expect(await lab.status(name, m0)).toBe(RunStatus.SKIPPED);
    const [entry] = await retryRuns(
      { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
      lab.job(name),
      [(await lab.run(name, m0))!],
      { states: [RunStatus.SKIPPED] },
    );
    expect(entry).toMatchObject({ action: 'refused' });
    expect(entry!.detail).toContain('forbid-skip: the run of');
    // Once the lane is free, the same command revives it and it runs.
    await box.ledger.lanes.release(name, { slot: m0 + MIN, shard: 0 });
    const [again] = await retryRuns(
      { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
      lab.job(name),
      [(await lab.run(name, m0))!],
      { states: [RunStatus.SKIPPED] },
    );
    expect(again).toMatchObject({ action: 'revived' });
    await lab.deliverSent();
    expect(await lab.status(name, m0)).toBe(RunStatus.SUCCEEDED);
  });
});
