/**
 * Trigger lag measures how late the scheduler dispatches a slot it planned in time. A job resumed
 * within misfire.after has the slots of its pause planned as on-time slots, after their fire time:
 * their first start is late by construction (the operator's pause), so they count as late starts,
 * and a routine pause of a minute no longer trips trigger-lag-p99.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunOrigin } from '../../shared/core/vocabulary.js';
import { MetricName } from '../../shared/runtime/observability.js';
import { testJobs } from '../support/helpers.js';
import { Lab, plannerTick } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('trigger lag after a pause', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('a short pause does not inflate the on-time trigger lag: slots of the pause planned on resume (within misfire.after) count as late starts', async () => {
    const name = 'paused-a-minute';
    const jobs = testJobs([{ name, schedule: '*/10 * * * * *', handler: 'noop', startLead: 0 }]);
    const tick = (now: number) => plannerTick(box, jobs, now);
    const first = await tick(T0 + 5 * SEC);
    expect(await box.ledger.planning.pause(name, first.plannedUntil, { by: 'ops', note: 'a minute', at: T0 + 30 * SEC })).toBe(true);
    await tick(T0 + 65 * SEC);
    expect(await box.ledger.planning.resume(name)).toBe(true);
    const resumedAt = T0 + 2 * MIN + 35 * SEC;
    await tick(resumedAt);

    const runs = await box.ledger.listRuns(name, { ascending: true });
    const originOf = (slot: number) => runs.find((r) => r.slot === slot)?.origin ?? RunOrigin.PLANNED;
    // Planned before the pause: on time.
    expect(originOf(T0 + 70 * SEC)).toBe(RunOrigin.PLANNED);
    // The pause's slots, planned on resume after their fire time: late by construction.
    for (let slot = T0 + 80 * SEC; slot <= T0 + 2 * MIN + 30 * SEC; slot += 10 * SEC)
      expect(originOf(slot), new Date(slot).toISOString()).toBe(RunOrigin.PLANNED_LATE);
    // Planned on resume ahead of their fire time: on time.
    expect(originOf(T0 + 2 * MIN + 40 * SEC)).toBe(RunOrigin.PLANNED);

    const lab = new Lab(box, jobs, { noop: { run: async () => undefined } }, resumedAt + SEC);
    expect(await lab.deliver(name, T0 + 2 * MIN)).toBe('ack');
    lab.clock.advance(T0 + 2 * MIN + 40 * SEC + 30 - lab.clock.now);
    expect(await lab.deliver(name, T0 + 2 * MIN + 40 * SEC)).toBe('ack');
    expect(lab.metrics.observations.get(MetricName.TriggerLag)).toEqual([30]);
    expect(lab.metrics.observations.get(MetricName.LateStartLag)).toEqual([36 * SEC]);
  });
});
