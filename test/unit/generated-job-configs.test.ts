/**
 * Generated job configs (fast-check) through parseJobs (DESIGN §4): more than 10,000 configs,
 * valid ones accepted with their values, invalid ones (one or two jobs per config broken in one of
 * many ways) rejected with an issue that names the broken job and the broken field, and no issue
 * naming a job that was fine.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { durationMs } from '../../shared/schedule/duration.js';
import { JobConfigError, parseJobs } from '../../shared/schedule/job-schema.js';
import { COMMON_SCHEDULES, jobNameArb, validJobInputArb } from '../support/job-config-arbitraries.js';

const HANDLERS = { handlers: ['reconcile', 'refresh', 'report'] } as const;
let configsChecked = 0;

// ------------------------------------------------------------------------------------------ valid

const validJobArb = validJobInputArb({
  names: jobNameArb(32),
  schedules: [...COMMON_SCHEDULES, '0 9 * * mon#1', '@hourly', '@daily', '0 0 * * 0', '5,35 */2 * * *'],
  handlers: HANDLERS.handlers,
  timezones: ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham'],
  minutes: true,
}).chain((job) =>
  // heartbeatEvery, when given, stays well inside the lease (a tenth to a half of it).
  fc.option(fc.double({ min: 0.1, max: 0.5, noNaN: true }), { nil: undefined }).map((fraction) => {
    if (fraction === undefined || job.lease === undefined) return job;
    const lease = typeof job.lease === 'number' ? job.lease : Number.parseInt(job.lease, 10) * (job.lease.endsWith('m') ? 60_000 : 1_000);
    return { ...job, heartbeatEvery: Math.max(1_000, Math.floor(lease * fraction)) };
  }),
);

const configArb = fc.uniqueArray(validJobArb, { minLength: 1, maxLength: 6, selector: (j) => j.name });

// ---------------------------------------------------------------------------------------- invalid

type Job = Record<string, unknown>;
/** One way to break a job, and the field the error must name. */
interface Breakage {
  readonly field: string;
  readonly arb: fc.Arbitrary<(job: Job) => Job>;
}
const set =
  (path: string, value: unknown) =>
  (job: Job): Job => {
    const [head, ...rest] = path.split('.');
    if (rest.length === 0) return { ...job, [head!]: value };
    const inner = (typeof job[head!] === 'object' && job[head!] !== null ? job[head!] : {}) as Job;
    return { ...job, [head!]: set(rest.join('.'), value)(inner) };
  };
const breakWith = (field: string, values: fc.Arbitrary<unknown>): Breakage => ({ field, arb: values.map((value) => set(field, value)) });
/** A breakage that replaces whole fields (for paths inside a union or a list, where `set` cannot reach). */
const whole = <T>(field: string, values: fc.Arbitrary<T>, fields: (value: T) => Job): Breakage => ({
  field,
  arb: values.map(
    (value) =>
      (job: Job): Job => ({ ...job, ...fields(value) }),
  ),
});
const notADuration = fc.oneof(
  fc.constantFrom('soon', 'forever', '5 minutes', '10x', '-5s', '', 'ms', '1.2.3s', 'P1D'),
  fc.integer({ max: -1 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, true, null, [], { seconds: 5 }),
);
const notAnInt = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.01, max: 0.99, noNaN: true })).map(([i, f]) => i + f),
  fc.constantFrom('3', true, null, [], {}),
);

const breakages: readonly Breakage[] = [
  breakWith('name', fc.constantFrom('Has-Caps', 'under_score', '-leading', 'trailing-', 'sp ace', 'dot.ted', 'x'.repeat(65), 'ünïcode')),
  breakWith(
    'schedule',
    fc.constantFrom('* *', '61 * * * *', '* * * * * * *', 'every minute', '', 'H * * * *', '* * 32 * *', '*/0 * * * *', '0 0 30 2 *'),
  ),
  breakWith('schedule', fc.constantFrom(42, null, true, ['* * * * *'], {}, { every: '1m', at: '2027-01-01' }, { cron: '* * * * *' })),
  whole('schedule.every', fc.oneof(notADuration, fc.constantFrom('500ms', '1.5s', 999, 0, '0s')), (every) => ({ schedule: { every } })),
  {
    field: 'schedule.phase',
    arb: fc
      .oneof(notADuration, fc.constantFrom('1h', '2h', '61m', '1500ms', 500))
      .map((phase) => (job: Job) => ({ ...job, schedule: { every: '1h', phase } })),
  },
  whole(
    'schedule.at',
    fc.constantFrom('tomorrow', '2027-02-30T12:00:00', '2027-01-01T24:00:00', '2027-01-01T12:00:00.5Z', '27-01-01', '2027-01-01Z', 5),
    (at) => ({ schedule: { at } }),
  ),
  whole('schedule.when', fc.constant('2027-01-01'), (when) => ({ schedule: { at: '2027-01-01T12:00:00', when } })),
  breakWith('jitter', fc.oneof(notADuration, fc.constantFrom('11m', '1h', 600_001))),
  breakWith('startAt', fc.constantFrom('yesterday', '2026-13-01', '2026-01-01T25:00:00', 20260101, '')),
  breakWith('endAt', fc.constantFrom('never', '2026-02-29', '2026-01-01T00:00:00+15:00', null)),
  breakWith('exclude', fc.constantFrom('2026-12-25', 5, { calendar: 'x' })),
  whole('exclude.0', fc.constantFrom('2026-12-32', 'Dec 25', 20261225, null, { calendar: 'x', extra: 1 }), (entry) => ({
    exclude: [entry],
  })),
  {
    field: 'exclude.0.calendar',
    arb: fc.constantFrom('us-holidays', 'none').map((calendar) => (job: Job) => ({ ...job, exclude: [{ calendar }] })),
  },
  {
    field: 'endAt',
    arb: fc
      .constantFrom('2025-12-31', '2025-01-01T00:00:00Z')
      .map((endAt) => (job: Job) => ({ ...job, schedule: '* * * * *', startAt: '2026-01-01', endAt })),
  },
  breakWith('timezone', fc.constantFrom('Atlantis/Capital', 'Mars/Olympus', 'utc+25', 'Europe/', '', 'GMT+99')),
  breakWith('handler', fc.constantFrom('unregistered', 'RECONCILE', 'reconcile ', '')),
  breakWith('enabled', fc.constantFrom('yes', 1, 0, null, 'true')),
  breakWith('dst.gap', fc.constantFrom('maybe', 'SHIFT', 1, null)),
  breakWith('dst.overlap', fc.constantFrom('thrice', 'never', 2, false)),
  breakWith('misfire.after', notADuration),
  breakWith('misfire.policy', fc.constantFrom('whenever', 'none', 'ALL', 3, null)),
  breakWith('misfire.maxPerTick', fc.oneof(fc.constantFrom(0, -1, 1_001, 1e9), notAnInt)),
  breakWith('overlap', fc.constantFrom('sometimes', 'forbid', 'queue', 'PARALLEL', 0)),
  breakWith('shards', fc.oneof(fc.constantFrom(0, -3, 101, 10_000), notAnInt)),
  breakWith('lease', notADuration),
  breakWith('timeout', notADuration),
  breakWith('deadline', notADuration),
  breakWith('startLead', notADuration),
  breakWith('retry.maxAttempts', fc.oneof(fc.constantFrom(0, -1, 11, 101), notAnInt)),
  breakWith('retry.backoff.base', notADuration),
  breakWith('retry.backoff.max', notADuration),
  breakWith('retry.backoff.jitter', fc.constantFrom('half', 'equal', 'FULL', 1, null)),
  {
    field: 'heartbeatEvery',
    arb: fc.integer({ min: 0, max: 3 }).map((extra) => (job: Job) => ({ ...job, lease: '9s', heartbeatEvery: 9_000 + extra * 1_000 })),
  },
  breakWith('heartbeatEvery', notADuration),
  // Unknown fields are typos that must not be ignored silently: the key itself is named.
  breakWith('retries', fc.constantFrom(3, { maxAttempts: 3 })),
  breakWith('schedul', fc.constant('* * * * *')),
  breakWith('retry.maxAttempt', fc.constant(5)),
  breakWith('misfire.maxPerTic', fc.constant(5)),
];

function issuesOf(inputs: readonly unknown[]): JobConfigError {
  try {
    parseJobs(inputs, HANDLERS);
  } catch (error) {
    if (error instanceof JobConfigError) return error;
    throw error;
  }
  throw new Error(`expected a JobConfigError for ${JSON.stringify(inputs).slice(0, 400)}`);
}

describe('generated job configs through parseJobs (> 10,000 configs)', () => {
  it('valid configs are accepted with their names, defaults applied and heartbeat inside the lease', () => {
    fc.assert(
      fc.property(configArb, (inputs) => {
        configsChecked += inputs.length;
        const jobs = parseJobs(inputs, HANDLERS);
        expect(jobs.map((j) => j.name)).toEqual(inputs.map((j) => j.name));
        for (const [i, job] of jobs.entries()) {
          const input = inputs[i]!;
          if (typeof input.schedule === 'string' || 'at' in input.schedule) expect(job.schedule).toEqual(input.schedule);
          else expect(job.schedule).toEqual({ every: durationMs(input.schedule.every), phase: durationMs(input.schedule.phase ?? 0) });
          expect(job.jitter).toBe(input.jitter === undefined ? undefined : durationMs(input.jitter));
          expect(job.exclude).toEqual(input.exclude === undefined ? undefined : [...(input.exclude as string[])].sort());
          expect(job.handler).toBe(input.handler);
          expect(job.timezone).toBe(input.timezone ?? 'UTC');
          expect(job.shards).toBe(input.shards ?? 1);
          expect(job.heartbeatEvery).toBeGreaterThan(0);
          expect(job.heartbeatEvery).toBeLessThan(job.lease);
          expect(job.misfire.maxPerTick).toBe(input.misfire?.maxPerTick ?? 10);
          expect(['skip', 'latest', 'all']).toContain(job.misfire.policy);
          expect(Number.isFinite(job.timeout) && Number.isFinite(job.startLead)).toBe(true);
        }
      }),
      { numRuns: 1_600, seed: 20261129 },
    );
  });

  it('configs with broken jobs are rejected naming each broken job and its field, and only those jobs', () => {
    const brokenArb = fc
      .tuple(configArb, fc.array(fc.tuple(fc.nat(), fc.constantFrom(...breakages)), { minLength: 1, maxLength: 2 }))
      .chain(([inputs, picks]) =>
        fc.tuple(
          fc.constant(inputs),
          fc.tuple(
            ...picks.map(([at, breakage]) => breakage.arb.map((apply) => ({ at: at % inputs.length, field: breakage.field, apply }))),
          ),
        ),
      );
    fc.assert(
      fc.property(brokenArb, ([inputs, breaks]) => {
        configsChecked += inputs.length;
        const broken = new Map<number, { field: string; apply: (job: Job) => Job }[]>();
        for (const b of breaks) broken.set(b.at, [...(broken.get(b.at) ?? []), b]);
        const all = inputs.map((job, i) => (broken.get(i) ?? []).reduce((j, b) => b.apply(j), job as Job));
        const error = issuesOf(all);
        const label = (i: number) => {
          const name = all[i]!.name;
          return typeof name === 'string' && name !== '' ? name : `#${i}`;
        };
        for (const [i, list] of broken) {
          // Two breakages of one job: the last one applied to a field wins; one of them is named.
          const named = list.some((b) => error.issues.some((issue) => issue.job === label(i) && issue.field === b.field));
          expect(named, `job ${label(i)} broken at ${list.map((b) => b.field).join(', ')}; issues: ${JSON.stringify(error.issues)}`).toBe(
            true,
          );
          expect(error.message).toContain(`job "${label(i)}"`);
        }
        const brokenLabels = new Set([...broken.keys()].map(label));
        for (const issue of error.issues)
          expect(brokenLabels.has(issue.job), `issue names an intact job: ${JSON.stringify(issue)}`).toBe(true);
      }),
      { numRuns: 2_600, seed: 424242 },
    );
  });

  it('non-object entries and duplicate names are named by position and by name', () => {
    fc.assert(
      fc.property(configArb, fc.constantFrom<unknown>(null, 'job', 42, [], true), fc.nat(), (inputs, junk, at) => {
        configsChecked += inputs.length + 2;
        const position = at % (inputs.length + 1);
        const withJunk = [...inputs.slice(0, position), junk, ...inputs.slice(position), { ...inputs[0]! }];
        const error = issuesOf(withJunk);
        expect(error.issues.some((i) => i.job === `#${position}` && i.field === '(job)')).toBe(true);
        expect(error.issues.some((i) => i.job === inputs[0]!.name && i.field === 'name' && /duplicate/.test(i.message))).toBe(true);
      }),
      { numRuns: 600, seed: 77 },
    );
  });

  it('checked more than 10,000 job configs', () => {
    expect(configsChecked).toBeGreaterThanOrEqual(10_000);
  });
});
