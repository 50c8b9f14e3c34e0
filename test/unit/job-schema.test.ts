/**
 * Job config validation (DESIGN §4): an invalid job must fail synth / cold start with a message
 * that names the job and the field, and every broken job must be reported at once.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  createJobParser,
  JobConfigError,
  parseJobs,
  WORKER_SCHEDULE_CHECKS,
  type Job,
  type JobConfigIssue,
} from '../../shared/schedule/job-schema.js';
import { configuredJobDefinitions, exampleJobsEnabled, loadJobs } from '../../shared/config.js';
import { exampleJobDefinitions } from '../../shared/example-jobs.js';
import { jobDefinitions } from '../../shared/jobs.js';
import { loadWorkerJobs } from '../../shared/worker/config.js';
import { slotsBetween } from '../../shared/schedule/slots.js';
import { slotSpecOf } from '../../shared/core/plan.js';
import { COMMON_SCHEDULES, jobNameArb, validJobInputArb } from '../support/job-config-arbitraries.js';

const HANDLERS = { handlers: ['h', 'other'] } as const;

function minimal(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'job-a', schedule: '* * * * *', handler: 'h', ...overrides };
}

/** Runs `fn`, expecting a JobConfigError, and returns it. */
function configError(fn: () => unknown): JobConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(JobConfigError);
    return error as JobConfigError;
  }
  throw new Error('expected a JobConfigError, but the config was accepted');
}

function expectNamed(error: JobConfigError, job: string, field: string): JobConfigIssue {
  expect(error.message).toContain(`job "${job}"`);
  expect(error.message).toContain(`field "${field}"`);
  const issue = error.issues.find((i) => i.job === job && i.field === field);
  expect(issue, `issues ${JSON.stringify(error.issues)} should name job ${job} / field ${field}`).toBeDefined();
  return issue!;
}

describe('parseJobs defaults: an omitted policy never leaves an undefined the planner or worker trips on', () => {
  it('applies every documented default to a minimal job', () => {
    const [job] = parseJobs([minimal()], HANDLERS);
    expect(job).toEqual<Job>({
      name: 'job-a',
      schedule: '* * * * *',
      handler: 'h',
      timezone: 'UTC',
      enabled: true,
      dst: { gap: 'shift', overlap: 'once' },
      misfire: { after: 300_000, policy: 'all', maxPerTick: 10 },
      overlap: 'parallel',
      effects: 'per-slot',
      shards: 1,
      lease: 30_000,
      heartbeatEvery: 10_000,
      timeout: 45_000,
      checkpoints: false,
      retry: { maxAttempts: 3, backoff: { base: 1_000, max: 300_000, jitter: 'full' } },
      startLead: 0,
    });
  });

  it('derives heartbeatEvery from the lease (lease / 3) so the lease is renewed well before it lapses', () => {
    const [job] = parseJobs([minimal({ lease: '45s' })], HANDLERS);
    expect(job!.lease).toBe(45_000);
    expect(job!.heartbeatEvery).toBe(15_000);
  });

  it('fills defaults inside partially given nested objects (misfire, dst, retry.backoff)', () => {
    const [job] = parseJobs(
      [minimal({ misfire: { policy: 'latest' }, dst: { gap: 'skip' }, retry: { maxAttempts: 7, backoff: { base: '2s' } } })],
      HANDLERS,
    );
    expect(job!.misfire).toEqual({ after: 300_000, policy: 'latest', maxPerTick: 10 });
    expect(job!.dst).toEqual({ gap: 'skip', overlap: 'once' });
    expect(job!.retry).toEqual({ maxAttempts: 7, backoff: { base: 2_000, max: 300_000, jitter: 'full' } });
  });

  it('parses duration strings into milliseconds (ms, s, m, h, d) and keeps numbers as ms', () => {
    const [job] = parseJobs(
      [
        minimal({
          lease: '2m',
          heartbeatEvery: '500ms',
          timeout: '1h',
          checkpoints: true,
          deadline: '1d',
          startLead: 0,
          misfire: { after: 90_000 },
        }),
      ],
      HANDLERS,
    );
    expect(job).toMatchObject({ lease: 120_000, heartbeatEvery: 500, timeout: 3_600_000, deadline: 86_400_000, startLead: 0 });
    expect(job!.misfire.after).toBe(90_000);
  });

  it('does not share default objects between jobs (mutating one job cannot leak into another)', () => {
    const [a, b] = parseJobs([minimal({ name: 'a' }), minimal({ name: 'b' })], HANDLERS);
    expect(a!.misfire).not.toBe(b!.misfire);
    expect(a!.dst).not.toBe(b!.dst);
  });
});

const withExamples = () => loadJobs(configuredJobDefinitions({ exampleJobs: true }));

describe('the shipped config (shared/jobs.ts, shared/example-jobs.ts): a broken example would fail every deploy', () => {
  it("loadJobs() validates the team's config against the real handler registry; the example jobs only when opted in", () => {
    expect(loadJobs(configuredJobDefinitions({ exampleJobs: false })).map((j) => j.name)).toEqual(jobDefinitions.map((j) => j.name));
    expect(
      withExamples()
        .map((j) => j.name)
        .sort(),
    ).toEqual([...jobDefinitions.map((j) => j.name), 'cache-refresh', 'payments-reconcile'].sort());
  });

  it('EXAMPLE_JOBS decides the default job set ("true", "false" or unset), and anything else is refused naming the variable', () => {
    expect(exampleJobsEnabled({})).toBe(false);
    expect(exampleJobsEnabled({ EXAMPLE_JOBS: 'false' })).toBe(false);
    expect(exampleJobsEnabled({ EXAMPLE_JOBS: 'true' })).toBe(true);
    expect(() => exampleJobsEnabled({ EXAMPLE_JOBS: 'yes' })).toThrow(
      'environment variable EXAMPLE_JOBS must be "true" or "false", got "yes"',
    );
    // The worker's loader (no cron parser) gets the same set as the planner's.
    expect(loadWorkerJobs(configuredJobDefinitions({ exampleJobs: true })).map((j) => j.name)).toEqual(withExamples().map((j) => j.name));
  });

  it('payments-reconcile fires every minute, on the minute', () => {
    const job = withExamples().find((j) => j.name === 'payments-reconcile')!;
    expect(job.handler).toBe('payments-reconcile');
    const t0 = Date.UTC(2024, 5, 1, 12, 0, 0);
    const slots = slotsBetween(slotSpecOf(job), t0, t0 + 5 * 60_000);
    expect(slots).toEqual([1, 2, 3, 4, 5].map((m) => t0 + m * 60_000));
  });

  it('cache-refresh uses a 6-field cron and fires every 10 seconds', () => {
    const job = withExamples().find((j) => j.name === 'cache-refresh')!;
    expect(typeof job.schedule === 'string' && job.schedule.trim().split(/\s+/)).toHaveLength(6);
    const t0 = Date.UTC(2024, 5, 1, 12, 0, 0);
    const slots = slotsBetween(slotSpecOf(job), t0, t0 + 60_000);
    expect(slots).toEqual([1, 2, 3, 4, 5, 6].map((k) => t0 + k * 10_000));
  });

  it('every shipped job has a heartbeat strictly shorter than its lease', () => {
    for (const job of withExamples()) expect(job.heartbeatEvery).toBeLessThan(job.lease);
  });

  it('loadJobs(definitions) validates other definitions against the same registry (unknown handler rejected)', () => {
    const error = configError(() => loadJobs([...exampleJobDefinitions, minimal({ name: 'extra', handler: 'no-such-handler' })]));
    expectNamed(error, 'extra', 'handler');
    expect(error.message).toContain('payments-reconcile');
  });
});

describe('each invalid field fails with a message naming the job and the field (so synth points at the typo)', () => {
  it('unknown handler', () => {
    const error = configError(() => parseJobs([minimal({ name: 'nightly', handler: 'does-not-exist' })], HANDLERS));
    const issue = expectNamed(error, 'nightly', 'handler');
    expect(issue.value).toBe('does-not-exist');
    expect(issue.message).toMatch(/unknown handler/);
  });

  it.each([
    ['too few fields', '* * *'],
    ['too many fields', '* * * * * * *'],
    ['minute out of range', '61 * * * *'],
    ['garbage', 'every minute please'],
    ['a date that never occurs', '0 0 31 2 *'],
    ['hashed value (non-deterministic)', 'H * * * *'],
    ['empty', ''],
  ])('bad cron expression: %s', (_label, schedule) => {
    const error = configError(() => parseJobs([minimal({ name: 'cron-job', schedule })], HANDLERS));
    const issue = expectNamed(error, 'cron-job', 'schedule');
    expect(issue.value).toBe(schedule);
  });

  it.each(['Mars/Olympus_Mons', 'Europe/Pariss', 'UTC+25', ''])('bad time zone %j', (timezone) => {
    const error = configError(() => parseJobs([minimal({ name: 'tz-job', timezone })], HANDLERS));
    expectNamed(error, 'tz-job', 'timezone');
  });

  it('duplicate name (two jobs would share one run key space and one watermark)', () => {
    const error = configError(() => parseJobs([minimal({ name: 'dup' }), minimal({ name: 'dup', schedule: '*/5 * * * *' })], HANDLERS));
    const issue = expectNamed(error, 'dup', 'name');
    expect(issue.message).toMatch(/duplicate/);
  });

  it.each(['Has_Upper', 'under_score', 'space name', '-leading', 'trailing-', 'dot.name', 'x'.repeat(65), 'slash/name', 'at@sign'])(
    'bad name chars %j (names go into keys and run keys `job@slot#shard`)',
    (name) => {
      const error = configError(() => parseJobs([minimal({ name })], HANDLERS));
      expectNamed(error, name, 'name');
    },
  );

  it('a job without a usable name is labelled by its position', () => {
    const error = configError(() => parseJobs([minimal({ name: 'ok' }), { schedule: '* * * * *', handler: 'h' }], HANDLERS));
    expectNamed(error, '#1', 'name');
  });

  it.each([
    ['lease', 'soon'],
    ['lease', -5],
    ['lease', '10 s'],
    ['timeout', '5 minutes'],
    ['startLead', '2x'],
    ['deadline', 'tomorrow'],
    ['heartbeatEvery', '1y'],
  ])('bad duration in %s (%j)', (field, value) => {
    const error = configError(() => parseJobs([minimal({ name: 'dur-job', [field]: value })], HANDLERS));
    const issue = expectNamed(error, 'dur-job', field);
    expect(issue.value).toBe(value);
  });

  it('bad nested duration names the dotted path (misfire.after, retry.backoff.base)', () => {
    const error = configError(() =>
      parseJobs([minimal({ name: 'nested', misfire: { after: 'later' }, retry: { backoff: { base: 'fast' } } })], HANDLERS),
    );
    expectNamed(error, 'nested', 'misfire.after');
    expectNamed(error, 'nested', 'retry.backoff.base');
  });

  it.each([
    ['explicit heartbeatEvery equal to lease', { lease: '30s', heartbeatEvery: '30s' }],
    ['explicit heartbeatEvery longer than lease', { lease: '10s', heartbeatEvery: '1m' }],
    ['lease 0 (default heartbeat 0 >= 0)', { lease: 0 }],
  ])('heartbeatEvery >= lease: the lease would lapse between heartbeats (%s)', (_label, overrides) => {
    const error = configError(() => parseJobs([minimal({ name: 'hb', ...overrides })], HANDLERS));
    const issue = expectNamed(error, 'hb', 'heartbeatEvery');
    expect(issue.message).toMatch(/shorter than lease/);
  });

  it.each([
    ['shards', 0],
    ['shards', 1.5],
    ['shards', 101],
    ['maxRuns', 0],
    ['maxRuns', 100_001], // past MAX_RUNS_LIMIT: the planner could not bound the job's last slot in one tick
    ['pauseOnFailure', 0],
    ['overlap', 'sometimes'],
    ['effects', 'latest'],
    ['enabled', 'yes'],
  ])('out-of-range or mistyped policy value %s = %j', (field, value) => {
    const error = configError(() => parseJobs([minimal({ name: 'policy', [field]: value })], HANDLERS));
    expectNamed(error, 'policy', field);
  });

  it('effects: an unknown value names the job, the field, the value as written and the two it may be', () => {
    const error = configError(() => parseJobs([minimal({ name: 'cursor', effects: 'last-wins' })], HANDLERS));
    const issue = expectNamed(error, 'cursor', 'effects');
    expect(issue.value).toBe('last-wins');
    expect(error.message).toMatch(/job "cursor": field "effects": .*"per-slot".*"latest-wins".* \(value: "last-wins"\)/);
    expect(parseJobs([minimal({ effects: 'latest-wins' })], HANDLERS)[0]!.effects).toBe('latest-wins');
  });

  it.each([
    ['misfire.policy', { misfire: { policy: 'never' } }],
    ['misfire.maxPerTick', { misfire: { maxPerTick: 0 } }],
    ['retry.maxAttempts', { retry: { maxAttempts: 0 } }],
    ['retry.backoff.jitter', { retry: { backoff: { jitter: 'half' } } }],
    ['dst.gap', { dst: { gap: 'jump' } }],
  ])('nested policy %s', (field, overrides) => {
    const error = configError(() => parseJobs([minimal({ name: 'nested-policy', ...overrides })], HANDLERS));
    expectNamed(error, 'nested-policy', field);
  });

  it('a non-object entry is reported, not crashed on', () => {
    const error = configError(() => parseJobs([minimal(), 'not a job', null], HANDLERS));
    expect(error.issues.map((i) => i.job)).toEqual(['#1', '#2']);
  });

  it('unknown field (strict) is rejected: a typo like `schedul` or `retries` must not be silently ignored', () => {
    const error = configError(() => parseJobs([minimal({ name: 'typo', retries: 5 })], HANDLERS));
    expect(error.message).toContain('job "typo"');
    expect(error.issues.some((i) => i.job === 'typo')).toBe(true);
  });

  // Regression: zod's `unrecognized_keys` issue has the path of the OBJECT, not of the key, so
  // the field came out as "(job)" (or "retry" for nested) with the message "Invalid input": the
  // message never named the unknown field. parseJobs now names the key itself.
  it('unknown field names the unknown key as the field (top level and nested)', () => {
    const top = configError(() => parseJobs([minimal({ name: 'typo', retries: 5 })], HANDLERS));
    expectNamed(top, 'typo', 'retries');
    const nested = configError(() => parseJobs([minimal({ name: 'typo2', retry: { maxAttempt: 5 } })], HANDLERS));
    expectNamed(nested, 'typo2', 'retry.maxAttempt');
  });

  // Regression: heartbeatEvery 0 (explicit, or derived from a lease under 3 ms) was accepted;
  // a zero-interval heartbeat timer spins, issuing UpdateItem + ChangeMessageVisibility back to back.
  it('heartbeatEvery of 0 ms is rejected (a zero-interval heartbeat would hammer the ledger)', () => {
    const explicit = configError(() => parseJobs([minimal({ name: 'hb0', heartbeatEvery: 0 })], HANDLERS));
    expectNamed(explicit, 'hb0', 'heartbeatEvery');
  });
});

describe('schedules beyond cron, window, exclusions and jitter are validated like every other field', () => {
  const CALENDARS = {
    handlers: ['h'],
    calendars: { 'us-holidays': ['2026-12-25', '2026-01-01'], 'plant-shutdown': ['2026-12-24', '2026-12-25'] },
  } as const;

  it('accepts each kind and keeps what the slot engine needs: durations in ms, dates expanded and sorted', () => {
    const [interval, once, windowed] = parseJobs(
      [
        minimal({ name: 'interval', schedule: { every: '6h', phase: '1h' }, jitter: '30s' }),
        minimal({ name: 'once', schedule: { at: '2026-12-24T18:00:00' }, timezone: 'America/New_York' }),
        minimal({
          name: 'windowed',
          startAt: '2026-01-01',
          endAt: '2027-01-01T00:00:00Z',
          exclude: ['2026-07-04', { calendar: 'us-holidays' }, { calendar: 'plant-shutdown' }],
        }),
      ],
      CALENDARS,
    );
    expect(interval!.schedule).toEqual({ every: 21_600_000, phase: 3_600_000 });
    expect(interval!.jitter).toBe(30_000);
    expect(once!.schedule).toEqual({ at: '2026-12-24T18:00:00' });
    expect(windowed!.exclude).toEqual(['2026-01-01', '2026-07-04', '2026-12-24', '2026-12-25']);
    expect(windowed!.startAt).toBe('2026-01-01');
    expect(slotsBetween(slotSpecOf(once!), 0, Date.UTC(2030, 0, 1))).toEqual([Date.UTC(2026, 11, 24, 23)]);
  });

  it.each([
    ['schedule.every', { schedule: { every: '500ms' } }, '500ms', /at least 1s/],
    ['schedule.every', { schedule: { every: '1500ms' } }, '1500ms', /whole number of seconds/],
    ['schedule.every', { schedule: { every: 'often' } }, 'often', /duration/],
    ['schedule.phase', { schedule: { every: '6h', phase: '6h' } }, '6h', /shorter than every "6h"/],
    ['schedule.phase', { schedule: { every: 90_000, phase: '2m' } }, '2m', /shorter than every 90000/],
    ['schedule.extra', { schedule: { every: '1m', extra: true } }, true, /unknown field/],
    [
      'schedule',
      { schedule: { every: '1m', at: '2026-12-24T18:00:00' } },
      { every: '1m', at: '2026-12-24T18:00:00' },
      /cron expression.*interval.*instant/,
    ],
    ['schedule.at', { schedule: { at: '2026-02-30T18:00:00' } }, '2026-02-30T18:00:00', /local date-time/],
    ['schedule.at', { schedule: { at: '2026-12-24T18:00:00.250Z' } }, '2026-12-24T18:00:00.250Z', /whole second/],
    [
      'schedule.at',
      { schedule: { at: '2026-03-08T02:30:00' }, timezone: 'America/New_York', dst: { gap: 'skip' } },
      '2026-03-08T02:30:00',
      /skips it for DST.*never run/,
    ],
    [
      'schedule.at',
      { schedule: { at: '2026-12-24T18:00:00Z' }, endAt: '2026-12-01' },
      '2026-12-24T18:00:00Z',
      /not before endAt "2026-12-01"/,
    ],
    [
      'schedule.at',
      { schedule: { at: '2026-12-24T18:00:00Z' }, startAt: '2027-01-01' },
      '2026-12-24T18:00:00Z',
      /before startAt "2027-01-01"/,
    ],
    [
      'schedule.at',
      { schedule: { at: '2026-12-25T09:00:00' }, exclude: [{ calendar: 'us-holidays' }] },
      '2026-12-25T09:00:00',
      /excluded date/,
    ],
    ['jitter', { jitter: '15m' }, '15m', /at most 10m/],
    ['jitter', { jitter: 'a bit' }, 'a bit', /duration/],
    ['startAt', { startAt: 'next monday' }, 'next monday', /local date-time/],
    ['endAt', { startAt: '2027-01-01', endAt: '2026-01-01' }, '2026-01-01', /after startAt "2027-01-01"/],
    ['exclude', { exclude: '2026-12-25' }, '2026-12-25', /list of dates/],
    ['exclude.1', { exclude: ['2026-12-25', '2026-12-32'] }, '2026-12-32', /real date/],
    ['exclude.0', { exclude: [{ calendar: 'us-holidays', year: 2026 }] }, { calendar: 'us-holidays', year: 2026 }, /date.*calendar/],
    [
      'exclude.1.calendar',
      { exclude: ['2026-12-25', { calendar: 'uk-holidays' }] },
      'uk-holidays',
      /unknown calendar; defined: us-holidays, plant-shutdown/,
    ],
  ] as const)('%s: %j is refused, naming job, field and the value as written', (field, overrides, value, message) => {
    const error = configError(() => parseJobs([minimal({ name: 'new-fields', ...overrides })], CALENDARS));
    const issue = expectNamed(error, 'new-fields', field);
    expect(issue.value).toEqual(value);
    expect(issue.message).toMatch(message);
    expect(error.message).toContain(`(value: ${JSON.stringify(value)})`);
  });

  it('a bad date in a calendar is reported once, by calendar name and position, even if no job uses it', () => {
    const error = configError(() =>
      parseJobs([minimal()], { handlers: ['h'], calendars: { 'us-holidays': ['2026-12-25', '12/26/2026'] } }),
    );
    expect(error.issues).toEqual([
      { job: '(calendars)', field: 'us-holidays.1', value: '12/26/2026', message: 'not a real date YYYY-MM-DD' },
    ]);
  });

  it('callers that pass no calendars keep working; a calendar reference then names "(none)"', () => {
    const error = configError(() => parseJobs([minimal({ name: 'cal', exclude: [{ calendar: 'us-holidays' }] })], HANDLERS));
    expect(expectNamed(error, 'cal', 'exclude.0.calendar').message).toMatch(/defined: \(none\)/);
    expect(parseJobs([minimal({ exclude: ['2026-12-25'] })], HANDLERS)[0]!.exclude).toEqual(['2026-12-25']);
  });

  it('a duration in a message is the one the job wrote (lease "5s"), never milliseconds', () => {
    const error = configError(() => parseJobs([minimal({ name: 'hb', lease: '5s', heartbeatEvery: '9s' })], HANDLERS));
    const issue = expectNamed(error, 'hb', 'heartbeatEvery');
    expect(issue.message).toBe('must be shorter than lease "5s"');
    expect(issue.value).toBe('9s');
    expect(error.message).not.toMatch(/5000|9000/);
  });

  it('the worker parser (no slot engine) accepts the same jobs and refuses the same formats', () => {
    const workerParse = createJobParser(WORKER_SCHEDULE_CHECKS);
    const good = [
      minimal({ name: 'a', schedule: { every: '90s' }, jitter: '5s' }),
      minimal({ name: 'b', schedule: { at: '2026-12-24T18:00:00' }, exclude: [{ calendar: 'us-holidays' }] }),
    ];
    expect(workerParse(good, CALENDARS)).toEqual(parseJobs(good, CALENDARS));
    const error = configError(() => workerParse([minimal({ name: 'c', schedule: { every: '90s', phase: '2m' } })], CALENDARS));
    expectNamed(error, 'c', 'schedule.phase');
  });
});

describe('all broken jobs are reported at once (one synth shows every problem)', () => {
  it('collects issues across jobs and fields without stopping at the first', () => {
    const error = configError(() =>
      parseJobs(
        [
          minimal({ name: 'good' }),
          minimal({ name: 'bad-cron', schedule: '* *' }),
          minimal({ name: 'bad-tz', timezone: 'Nowhere/City' }),
          minimal({ name: 'bad-handler', handler: 'ghost' }),
          minimal({ name: 'two-problems', lease: 'x', shards: -1 }),
          minimal({ name: 'good' }),
        ],
        HANDLERS,
      ),
    );
    expectNamed(error, 'bad-cron', 'schedule');
    expectNamed(error, 'bad-tz', 'timezone');
    expectNamed(error, 'bad-handler', 'handler');
    expectNamed(error, 'two-problems', 'lease');
    expectNamed(error, 'two-problems', 'shards');
    expectNamed(error, 'good', 'name'); // the duplicate
    expect(error.issues).toHaveLength(6);
    expect(error.message.split('\n')).toHaveLength(6);
  });

  it("a cron step larger than its field's range (*/61, and */60 in minutes) is refused naming job, field and value, not read as minute 0", () => {
    for (const [schedule, part] of [
      ['*/61 * * * *', 'minute field "*/61": step 61 is larger than the field\'s range 0-59'],
      ['*/60 * * * *', 'minute field "*/60": step 60 is larger than the field\'s range 0-59'],
      ['0 */24 * * *', 'hour field "*/24": step 24 is larger than the field\'s range 0-23'],
      ['0 0 */31 * *', 'day-of-month field "*/31": step 31'],
      ['0 0 1 */12 *', 'month field "*/12": step 12'],
      ['0 0 * * */7', 'day-of-week field "*/7": step 7'],
      ['*/60 * * * * *', 'second field "*/60": step 60'],
      ['10-20/60 * * * *', 'minute field "10-20/60": step 60'],
    ] as const) {
      const error = configError(() => parseJobs([minimal({ schedule })], HANDLERS));
      const issue = expectNamed(error, 'job-a', 'schedule');
      expect(issue.value).toBe(schedule);
      expect(issue.message).toContain(part);
    }
    // The widest steps that still fire twice per period stay valid.
    for (const schedule of ['*/59 * * * *', '0 */23 * * *', '0 0 */30 * *', '0 0 1 */11 *', '0 0 * * */6', '*/30 * * * * *']) {
      expect(() => parseJobs([minimal({ schedule })], HANDLERS), schedule).not.toThrow();
    }
  });

  it('every error of one job is reported, not only the first: a bad zone or schedule does not hide an unknown handler or a heartbeat past the lease', () => {
    const error = configError(() =>
      parseJobs(
        [minimal({ schedule: '*/61 */99 * * *', timezone: 'Mars/Olympus', handler: 'nope', lease: '5s', heartbeatEvery: '10s' })],
        HANDLERS,
      ),
    );
    expect(error.issues.map((i) => i.field).sort()).toEqual(['handler', 'heartbeatEvery', 'schedule', 'timezone']);
    // Both bad cron fields, in the one schedule issue.
    expect(expectNamed(error, 'job-a', 'schedule').message).toMatch(/minute field "\*\/61".*; hour field "\*\/99"/);
    expect(expectNamed(error, 'job-a', 'handler').value).toBe('nope');
    expect(expectNamed(error, 'job-a', 'heartbeatEvery').message).toContain('must be shorter than lease "5s"');
    expect(error.message.split('\n')).toHaveLength(4);
  });

  it('a field that fails to parse is not checked against others (no second, derived error for it)', () => {
    const error = configError(() => parseJobs([minimal({ lease: 'soon', timeout: 'later', timezone: 'Nowhere/Here' })], HANDLERS));
    expect(error.issues.map((i) => i.field).sort()).toEqual(['lease', 'timeout', 'timezone']);
  });

  it('JobConfigError is a real Error with a stable name (synth prints it, handlers can instanceof it)', () => {
    const error = configError(() => parseJobs([minimal({ handler: 'nope' })], HANDLERS));
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('JobConfigError');
  });
});

// ------------------------------------------------------------------------------------------------
// Property: generated valid configs are accepted; one mutated field is rejected, naming job + field.
// ------------------------------------------------------------------------------------------------

const validJobArb = validJobInputArb({
  names: jobNameArb(22),
  schedules: [...COMMON_SCHEDULES, '@hourly', '@daily', '0 9 * * mon#1'],
  handlers: HANDLERS.handlers,
  timezones: ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'],
  minutes: false,
});

/** One corruption of one field, and the field the error must name. */
type Mutation = { readonly field: string; readonly apply: (job: Record<string, unknown>) => Record<string, unknown> };
const mutations: readonly Mutation[] = [
  { field: 'name', apply: (j) => ({ ...j, name: `${String(j.name)}_X` }) },
  { field: 'schedule', apply: (j) => ({ ...j, schedule: '* * * not-a-cron *' }) },
  { field: 'schedule', apply: (j) => ({ ...j, schedule: '* *' }) },
  { field: 'timezone', apply: (j) => ({ ...j, timezone: 'Atlantis/Capital' }) },
  { field: 'handler', apply: (j) => ({ ...j, handler: 'unregistered' }) },
  { field: 'shards', apply: (j) => ({ ...j, shards: 0 }) },
  { field: 'lease', apply: (j) => ({ ...j, lease: 'a while' }) },
  { field: 'timeout', apply: (j) => ({ ...j, timeout: -1 }) },
  { field: 'overlap', apply: (j) => ({ ...j, overlap: 'maybe' }) },
  { field: 'effects', apply: (j) => ({ ...j, effects: 'sometimes' }) },
  { field: 'misfire.policy', apply: (j) => ({ ...j, misfire: { ...(j.misfire as object), policy: 'whenever' } }) },
  { field: 'retry.maxAttempts', apply: (j) => ({ ...j, retry: { ...(j.retry as object), maxAttempts: 0 } }) },
  { field: 'heartbeatEvery', apply: (j) => ({ ...j, lease: '9s', heartbeatEvery: '9s' }) },
];

describe('property: the validator accepts exactly the valid configs and names what it rejects', () => {
  it('generated valid jobs are accepted with their values preserved', () => {
    fc.assert(
      fc.property(fc.uniqueArray(validJobArb, { minLength: 1, maxLength: 5, selector: (j) => j.name }), (inputs) => {
        const jobs = parseJobs(inputs, HANDLERS);
        expect(jobs.map((j) => j.name)).toEqual(inputs.map((j) => j.name));
        for (const job of jobs) {
          expect(job.heartbeatEvery).toBeLessThan(job.lease);
          expect(job.heartbeatEvery).toBeGreaterThan(0);
          expect(typeof job.lease).toBe('number');
        }
      }),
      { numRuns: 200 },
    );
  });

  it('one mutated field in one job is rejected naming that job and that field, and only that job', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(validJobArb, { minLength: 1, maxLength: 5, selector: (j) => j.name }),
        fc.nat(),
        fc.constantFrom(...mutations),
        (inputs, pick, mutation) => {
          const index = pick % inputs.length;
          const mutated = mutation.apply(inputs[index] as Record<string, unknown>);
          const all = inputs.map((job, i) => (i === index ? mutated : job));
          const error = configError(() => parseJobs(all, HANDLERS));
          const label = String(mutated.name);
          expectNamed(error, label, mutation.field);
          expect(error.issues.every((issue) => issue.job === label)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
