/**
 * pauseOnFailure records where the job stopped planning; a run that is not
 * the planner's newest (a backfilled slot) must not move that back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfill } from '../../shared/operations/backfill.js';
import { RunOrigin, RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { silentLogger, testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('pauseOnFailure and the planner cursor', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('a backfilled run that goes DEAD pauses the job where its planning stands: on resume no slot from before the job was first planned is created', async () => {
    const name = `pf-${Math.random().toString(36).slice(2, 8)}`;
    const m0 = Math.floor(Date.now() / MIN) * MIN;
    const handler: JobHandler = {
      async run(ctx) {
        if (ctx.slot < m0) throw new PermanentError('the old feed is gone', { code: 'GONE' });
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          pauseOnFailure: 1,
          misfire: { after: '1m', policy: 'all', maxPerTick: 5 },
        },
      ],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: handler }, m0 + 10_000);
    const tick = () =>
      runPlannerTick(
        { ledger: box.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics },
        { partition: 0, of: 1 },
      );
    // The job is planned for the first time now; its first run is still open (a newer success
    // would end the backfilled run's failure streak).
    await tick();
    lab.queue.take();
    // An operator backfills one slot three hours back; it fails for good and pauseOnFailure pauses the job.
    const old = m0 - 3 * HOUR;
    await backfill(
      { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
      { job: lab.job(name), from: old, to: old + MIN },
    );
    await lab.deliverSent();
    expect(await lab.status(name, old)).toBe(RunStatus.DEAD);
    // The operator reads the note, decides the old slot is moot, and resumes.
    expect(await box.ledger.planning.resume(name)).toBe(true);
    lab.clock.advance(MIN);
    await tick();
    // README (pause, resume): "On resume, the missed slots follow the job's misfire policy ... never a slot from before the job was first planned."
    const catchUp = (await box.ledger.listRuns(name, { ascending: true })).filter((r) => r.slot < m0 && r.origin === RunOrigin.CATCH_UP);
    expect(catchUp.map((r) => r.runKey)).toEqual([]);
  });
});
