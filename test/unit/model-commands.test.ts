/**
 * The generator's command mix: the full mix draws every kind; a swarm scenario draws from a random
 * half of them (always with production running on), so that rare pairs of commands meet more often.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COMMAND_KINDS,
  commandsArb,
  kindSwarmFaultProfileArb,
  scenarioSetupArb,
  SWARM_KINDS,
  swarmKindsArb,
} from '../../tools/model/commands.js';
import { DYNAMO_CALL_KINDS, SQS_CALL_KINDS } from '../../tools/model/ledger-view.js';

/** The swarm's own commands, by the full-mix command they were split from. */
const SPLIT_FROM: Readonly<Record<string, string>> = {
  RetryJob: 'Retry',
  RemoveBackloggedJob: 'RemoveJob',
  RemoveBulkAdded: 'AddManyJobs',
  ChangeJob: 'ChangeSchedule',
  AddJobSoon: 'ChangeSchedule',
  OpsTrigger: 'Retry',
};

/** The kinds of command in one scenario, by class name (the parts of a `together` counted). */
function kindsIn(commands: Iterable<unknown>): Set<string> {
  const seen = new Set<string>();
  const visit = (wrapped: unknown) => {
    // fc.commands hands out each command in a wrapper that holds it as `cmd`.
    const command = (wrapped as { cmd?: unknown }).cmd ?? wrapped;
    const parts = (command as { parts?: readonly unknown[] }).parts;
    if (parts) parts.forEach(visit);
    else seen.add((command as object).constructor.name);
  };
  for (const command of commands) visit(command);
  return seen;
}

describe('model generator: command mix', () => {
  it('a swarm scenario always keeps production running (run-for) and leaves out each other kind about half the time', () => {
    const samples = fc.sample(swarmKindsArb, { seed: 7, numRuns: 400 });
    for (const kinds of samples) expect(kinds.map((k) => k.name)).toContain('run-for');
    for (const kind of SWARM_KINDS.filter((k) => !k.always)) {
      const share = samples.filter((kinds) => kinds.some((k) => k.name === kind.name)).length / samples.length;
      expect(share, kind.name).toBeGreaterThan(0.38);
      expect(share, kind.name).toBeLessThan(0.62);
    }
  });

  it("a swarm scenario splits an advance's rare modes into kinds of their own (an outage of minutes, of hours)", () => {
    const names = SWARM_KINDS.map((k) => k.name);
    expect(names).toEqual(expect.arrayContaining(['advance-seconds', 'advance-minutes', 'advance-hours']));
    expect(names).not.toContain('advance');
    expect(COMMAND_KINDS.map((k) => k.name)).toContain('advance');
  });

  it('a swarm scenario may retry the ended runs whose result is unknown first (the ones a revival must reconcile)', () => {
    expect(SWARM_KINDS.map((k) => k.name)).toEqual(
      expect.arrayContaining([
        'ops-retry',
        'ops-retry-unknown',
        'ops-retry-job',
        'add-many-jobs',
        'remove-bulk-jobs',
        'remove-job',
        'remove-backlogged-job',
      ]),
    );
    const [retry] = fc.sample(SWARM_KINDS.find((k) => k.name === 'ops-retry-unknown')!.arbitrary, { seed: 3, numRuns: 1 });
    expect(String(retry)).toMatch(/ops retry run#\d+ \(an ended run whose result is unknown if any\)/);
  });

  it('swarm scenarios draw fewer kinds each than full-mix ones, and across scenarios every kind still comes up', () => {
    const mean = (mix: 'full' | 'swarm') => {
      const scenarios = fc.sample(commandsArb(40, mix), { seed: 11, numRuns: 200 }).map((c) => kindsIn(c));
      const all = new Set(scenarios.flatMap((s) => [...s]));
      const families = scenarios.map((s) => new Set([...s].map((name) => SPLIT_FROM[name] ?? name)));
      return { perScenario: families.reduce((n, s) => n + s.size, 0) / scenarios.length, all };
    };
    const full = mean('full');
    const swarm = mean('swarm');
    // By command class, the swarm's own commands counted as the class they were split from: the
    // swarm's split kinds (advances of seconds, minutes, hours; backfills; retries; removals)
    // share a class, so a swarm scenario keeps most classes through one of its kinds (measured:
    // 8.95 against 10.1 of the full mix at 40 commands, fixed seed).
    expect(swarm.perScenario).toBeLessThan(full.perScenario * 0.9);
    // Every command of the full mix, and the swarm's own: the rollback of a bulk add, a job's
    // retry, the removal of the job with the most open runs, a change of any job field, a job
    // added with its first slot inside the lookahead, an operator's trigger.
    expect([...swarm.all].sort()).toEqual(
      [...full.all, 'RemoveBulkAdded', 'RetryJob', 'RemoveBackloggedJob', 'ChangeJob', 'AddJobSoon', 'OpsTrigger'].sort(),
    );
    expect(full.all.size).toBeGreaterThanOrEqual(20);
  });
});

describe('model generator: the swarm over call kinds (fault profiles "kinds")', () => {
  const kinds = [...DYNAMO_CALL_KINDS, ...SQS_CALL_KINDS];
  const samples = fc.sample(kindSwarmFaultProfileArb, { seed: 5, numRuns: 2_000 });

  it('faults each call kind in about a quarter of the scenarios (a focused profile: one in nineteen)', () => {
    for (const kind of kinds) {
      const share = samples.filter((p) => p.kinds.includes(kind)).length / samples.length;
      expect(share, kind).toBeGreaterThan(0.18);
      expect(share, kind).toBeLessThan(0.33);
    }
  });

  it('every profile faults at least one kind with at least one fault of a call, never latency, at a high rate', () => {
    for (const p of samples) {
      expect(p.kinds.length).toBeGreaterThan(0);
      expect(p.weights.refused + p.weights['lost-response'] + p.weights.throttled + p.weights.conflict).toBeGreaterThan(0);
      expect(p.weights.latency).toBe(0);
      expect([0.2, 0.4]).toContain(p.rate);
    }
  });
});

describe('model generator: the swarm over job traits (--job-mix swarm)', () => {
  const N = 3_000;
  const sample = (mix: 'full' | 'swarm') => fc.sample(scenarioSetupArb('kinds', mix), { seed: 1, numRuns: N });
  const full = sample('full');
  const swarm = sample('swarm');
  const share = (setups: typeof full, f: (s: (typeof full)[number]) => boolean) => setups.filter(f).length / N;
  const unknownish = new Set(['unknown', 'timeout', 'hang', 'zombie']);

  it("a scenario's jobs agree on reconciling more often: reconcile is always, never or either per scenario", () => {
    const agree = (s: (typeof full)[number]) => s.jobs.length > 1 && s.jobs.every((j) => j.reconcile === s.jobs[0]!.reconcile);
    const multi = (setups: typeof full) => share(setups, (s) => s.jobs.length > 1);
    expect(share(swarm, agree) / multi(swarm)).toBeGreaterThan((share(full, agree) / multi(full)) * 1.2);
  });

  it('a job that reconciles and whose every attempt may end with its result unknown comes up more often (the road to a run DEAD with its result unknown)', () => {
    const heavy = (s: (typeof full)[number]) => s.jobs.some((j) => j.reconcile && j.behaviours.every((b) => unknownish.has(b.kind)));
    expect(share(swarm, heavy)).toBeGreaterThan(share(full, heavy) * 1.2);
  });

  it('a job that reconciles, has one attempt and whose handler may charge and then throw ResultUnknownError comes up more often (the road to a run DEAD with its result unknown and its effect landed, which a revival must reconcile)', () => {
    const deadWithEffect = (s: (typeof full)[number]) =>
      s.jobs.some((j) => j.reconcile && j.maxAttempts === 1 && j.behaviours.some((b) => b.kind === 'unknown'));
    expect(share(swarm, deadWithEffect)).toBeGreaterThan(share(full, deadWithEffect) * 1.5);
  });

  it('every attempt budget still comes up across scenarios', () => {
    expect(new Set(swarm.flatMap((s) => s.jobs.map((j) => j.maxAttempts)))).toEqual(new Set([1, 2, 3, 4]));
  });

  it("a swarm scenario starts on a removed job's orphans a quarter of the time, more than a hundred of them in about half of those (class 9's trigger from the first command on); a full-mix one never does (its fixed seeds draw the same scenarios)", () => {
    const orphans = swarm.map((s) => s.inheritedOrphans ?? 0);
    expect(full.every((s) => s.inheritedOrphans === undefined)).toBe(true);
    expect(orphans.filter((n) => n > 0).length / N).toBeGreaterThan(0.2);
    expect(orphans.filter((n) => n > 0).length / N).toBeLessThan(0.3);
    expect(orphans.filter((n) => n > 100).length / N).toBeGreaterThan(0.1);
    expect(Math.min(...orphans.filter((n) => n > 0))).toBeLessThan(100);
  });

  it('every behaviour still comes up across scenarios, and success is in every job mix', () => {
    const kinds = new Set(swarm.flatMap((s) => s.jobs.flatMap((j) => j.behaviours.map((b) => b.kind))));
    expect(kinds).toEqual(new Set(full.flatMap((s) => s.jobs.flatMap((j) => j.behaviours.map((b) => b.kind)))));
    expect(kinds.size).toBe(9);
  });
});
