/**
 * The job definition schema (DESIGN §4): what teams write in shared/jobs.ts, validated at synth
 * time, at cold start and by the tests. zod/mini keeps the Lambda bundles small, and the cron
 * grammar check is injected: the planner and synth check it with the slot engine
 * (shared/schedule/job-schema.ts), while the worker, which never computes slots, leaves the cron
 * parser out of its bundle.
 *
 * Every error names the job and the field, so `cdk synth` fails with e.g.
 *   job "payments-reconcile": field "schedule": expected 5 or 6 fields (value: "* *")
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { durationMs, formatDuration } from './duration.js';
import { DEFAULT_DST } from './dst.js';
import { dateTimeField, excludeField, MAX_JITTER_MS, scheduleField, type ExcludeEntry } from './schedule-schema.js';
import { calendarIssues, expandExclude } from './job-calendars.js';

export { CALENDARS_LABEL } from './job-calendars.js';
import { slotSpecOf, type SlotSpec, type SpecProblem } from './schedule-spec.js';
import { JobConfigError, type Calendars, type JobConfigIssue } from './job-config-issue.js';

export { JobConfigError, type Calendars, type JobConfigIssue } from './job-config-issue.js';

/**
 * Largest `maxRuns`: a bound recorded by earlier code as a slot range is converted by counting its
 * slots once (legacyRunCount), which must stay a bounded piece of one tick's work.
 */
export const MAX_RUNS_LIMIT = 100_000;

// zod/mini ships without messages; English ones make "Too big: expected number to be <=10" readable.
z.config(en());

const JOB_NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** The default per-attempt timeout: fits the default worker Lambda timeout with its margins. */
export const DEFAULT_TIMEOUT_MS = 45_000;
/** The worker Lambda's timeout unless the deployment says otherwise (RUN_QUEUES.workerTimeoutSeconds). */
export const DEFAULT_WORKER_TIMEOUT_MS = 60_000;
/** The worker yields an attempt this long before its invocation times out (WorkerOptions.yieldMarginMs). */
export const WORKER_YIELD_MARGIN_MS = 10_000;
/**
 * Jobs start when SQS delivers their message unless they ask for sub-second precision: a start
 * wait is Lambda time billed on every run, and most schedules do not need it.
 */
export const DEFAULT_START_LEAD_MS = 0;
/** The start wait (startLead) may run this much past startLead (SQS delays are whole seconds). */
const START_WAIT_SLACK_MS = 1_000;

/** The longest `timeout` a job that does not checkpoint can have under a worker timeout. */
export function maxAttemptTimeoutMs(workerTimeoutMs: number, startLeadMs: number): number {
  return workerTimeoutMs - WORKER_YIELD_MARGIN_MS - startLeadMs - START_WAIT_SLACK_MS;
}

const duration = (field: string) =>
  z.pipe(
    z.union([z.number(), z.string()]),
    z.transform((value, ctx) => {
      const ms = durationMs(value);
      if (ms === undefined) {
        ctx.issues.push({
          code: 'custom',
          input: value,
          message: `${field} must be milliseconds or a duration such as "30s", "5m", "1h"`,
        });
        return z.NEVER;
      }
      return ms;
    }),
  );

export const OverlapPolicy = {
  FORBID_SKIP: 'forbid-skip',
  FORBID_QUEUE: 'forbid-queue',
  COALESCE: 'coalesce',
  /** A newer due run takes over from the one still running: stopped through the fence, SUPERSEDED. */
  REPLACE: 'replace',
  PARALLEL: 'parallel',
} as const;
export type OverlapPolicy = (typeof OverlapPolicy)[keyof typeof OverlapPolicy];

export const MisfirePolicy = { SKIP: 'skip', LATEST: 'latest', ALL: 'all' } as const;

export const Effects = {
  /** Each slot's run writes its own result: an older slot run late still lands. */
  PER_SLOT: 'per-slot',
  /** The runs overwrite one shared fenced item: a newer slot's fence refuses every older slot's write. */
  LATEST_WINS: 'latest-wins',
} as const;
export type Effects = (typeof Effects)[keyof typeof Effects];
export type MisfirePolicy = (typeof MisfirePolicy)[keyof typeof MisfirePolicy];

function jobShapeWith(checks: ScheduleChecks) {
  return z.strictObject({
    name: z.string().check(z.regex(JOB_NAME, 'name must match [a-z0-9-], 1-64 characters, no leading or trailing dash')),
    /** A cron expression, `{ every, phase? }` or `{ at }` (schedule-schema.ts). */
    schedule: scheduleField((value) => checks.scheduleError(value)),
    timezone: z._default(
      z.string().check(
        z.superRefine((value, ctx) => {
          const problem = checks.timezoneError(value);
          if (problem) ctx.issues.push({ code: 'custom', input: value, message: problem });
        }),
      ),
      'UTC',
    ),
    handler: z.string().check(z.minLength(1, 'handler is required')),
    enabled: z._default(z.boolean(), true),
    /** @default { gap: 'shift', overlap: 'once' } */
    dst: z._default(
      z.strictObject({
        gap: z._default(z.enum(['shift', 'skip']), DEFAULT_DST.gap),
        overlap: z._default(z.enum(['once', 'twice']), DEFAULT_DST.overlap),
      }),
      { ...DEFAULT_DST },
    ),
    /** @default { after: '5m', policy: 'all', maxPerTick: 10 } */
    misfire: z._default(
      z.strictObject({
        after: z._default(duration('misfire.after'), 300_000),
        policy: z._default(z.enum(['skip', 'latest', 'all']), 'all'),
        maxPerTick: z._default(z.int().check(z.gte(1), z.lte(1000)), 10),
      }),
      { after: 300_000, policy: 'all', maxPerTick: 10 },
    ),
    /** @default 'parallel' */
    overlap: z._default(z.enum(['forbid-skip', 'forbid-queue', 'coalesce', 'replace', 'parallel']), 'parallel'),
    /**
     * What a run's effects are: 'per-slot' (each slot writes its own result, so an older slot run
     * late still lands) or 'latest-wins' (the handler overwrites one shared fenced item, so a newer
     * slot's write refuses every older slot's: a backfill of such a job only makes SUPERSEDED runs,
     * and `ops backfill` says so before creating any). @default 'per-slot'
     */
    effects: z._default(z.enum(['per-slot', 'latest-wins']), 'per-slot'),
    /**
     * Pause the job after this many consecutive DEAD runs (a run an operator resolved does not
     * count); `ops resume` clears it. @default never
     */
    pauseOnFailure: z.optional(z.int().check(z.gte(1), z.lte(1_000))),
    /** End the job after this many scheduled runs (manual triggers and backfills do not count; at most MAX_RUNS_LIMIT). @default unbounded */
    maxRuns: z.optional(z.int().check(z.gte(1), z.lte(MAX_RUNS_LIMIT))),
    /** @default 1 */
    shards: z._default(z.int().check(z.gte(1), z.lte(100)), 1),
    /** Lease length. @default 30 s */
    lease: z._default(duration('lease'), 30_000),
    /** @default lease / 3 */
    heartbeatEvery: z.optional(duration('heartbeatEvery')),
    /**
     * Per-attempt timeout; with the start wait it must fit in one worker invocation (Lambda
     * timeout − yield margin), unless the job `checkpoints`. @default 45 s
     */
    timeout: z._default(duration('timeout'), DEFAULT_TIMEOUT_MS),
    /**
     * The handler saves progress with `ctx.checkpoint` and resumes from `ctx.resumeFrom`: an attempt
     * that reaches the invocation's time limit yields and goes on in the next invocation (a yield
     * without a new checkpoint spends the attempt), so `timeout` may exceed one invocation and counts
     * across them. @default false
     */
    checkpoints: z._default(z.boolean(), false),
    /** @default { maxAttempts: 3, backoff: { base: '1s', max: '5m', jitter: 'full' } } */
    retry: z._default(
      z.strictObject({
        // Stays below the queue's maxReceiveCount (15) so only poison and crash loops reach the DLQ.
        maxAttempts: z._default(z.int().check(z.gte(1), z.lte(10)), 3),
        backoff: z._default(
          z.strictObject({
            base: z._default(duration('retry.backoff.base'), 1_000),
            max: z._default(duration('retry.backoff.max'), 300_000),
            jitter: z._default(z.enum(['full', 'none']), 'full'),
          }),
          { base: 1_000, max: 300_000, jitter: 'full' },
        ),
      }),
      { maxAttempts: 3, backoff: { base: 1_000, max: 300_000, jitter: 'full' } },
    ),
    /** Time after the slot by which the slot must be done, else DEAD. @default none */
    deadline: z.optional(duration('deadline')),
    /**
     * How early a run's message becomes visible before its slot; the worker waits out the rest so
     * the handler starts on the slot despite SQS's whole-second delays. 0 = start when SQS delivers
     * (in the second after the slot, up to ~1 s late) with no wait to pay for. Sub-second start
     * precision is a per-job choice: '1500ms' starts handlers within milliseconds of the slot and
     * costs between startLead − 1 s and startLead of Lambda time per run (README "Start
     * precision"). @default 0
     */
    startLead: z._default(duration('startLead'), DEFAULT_START_LEAD_MS),
    /**
     * Fire each run up to this long after its slot, by an offset fixed per (job, slot) (jitter.ts):
     * spreads jobs sharing a schedule. Never past the next slot. At most 10m. @default none
     */
    jitter: z.optional(
      duration('jitter').check(
        z.refine((ms) => ms <= MAX_JITTER_MS, 'jitter must be at most 10m (SQS delays a message at most 15 minutes)'),
      ),
    ),
    /** No slot before this. @default unbounded */
    startAt: z.optional(dateTimeField('startAt')),
    /** No slot at or after this. @default unbounded */
    endAt: z.optional(dateTimeField('endAt')),
    /** Local dates, and named calendars of them, on which the job does not fire. @default none */
    exclude: z.optional(excludeField),
  });
}

export type JobInput = z.input<ReturnType<typeof jobShapeWith>>;
type ParsedJob = z.output<ReturnType<typeof jobShapeWith>>;
export interface Job extends Omit<ParsedJob, 'heartbeatEvery' | 'exclude'> {
  readonly heartbeatEvery: number;
  /** The excluded local dates, calendars expanded: sorted, no duplicates. Absent when none. */
  readonly exclude?: readonly string[];
}

export type { ExcludeEntry };

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** Checks of the schedule fields that need more than the schema. */
export interface ScheduleChecks {
  /** The cron grammar of a string schedule. */
  scheduleError(schedule: string): string | undefined;
  timezoneError(timezone: string): string | undefined;
  /** What the fields refuse together, read in the zone (a one-time slot outside the window...). @default none */
  specProblems?(spec: SlotSpec): readonly SpecProblem[];
}

/** A zone the runtime's Intl knows; no tables of our own. */
export function intlTimezoneError(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return 'unknown IANA time zone';
  }
}

/**
 * What the worker checks at cold start: the zone, and that a schedule is present. The cron
 * grammar was checked at synth and by the planner's cold start, with the same definitions.
 */
export const WORKER_SCHEDULE_CHECKS: ScheduleChecks = {
  scheduleError: (schedule) => (schedule.trim() === '' ? 'schedule is required' : undefined),
  timezoneError: intlTimezoneError,
};

export interface ParseJobsOptions {
  /** Names of the registered handlers; a job naming another one is rejected. */
  readonly handlers: readonly string[];
  /** The worker Lambda's timeout the jobs must fit in. @default DEFAULT_WORKER_TIMEOUT_MS (60 s) */
  readonly workerTimeoutMs?: number;
  /** The calendars jobs may name in `exclude`. @default {} */
  readonly calendars?: Calendars;
}

/**
 * Validates every job and returns them with defaults applied. Collects all problems before
 * throwing so one synth shows every broken job at once.
 */
export function createJobParser(checks: ScheduleChecks): (inputs: readonly unknown[], options: ParseJobsOptions) => Job[] {
  const jobShape = jobShapeWith(checks);
  return (inputs, options) => parseWith(jobShape, checks, inputs, options);
}

/** A duration field as the job wrote it (or its default), for messages that quote it. */
function asWritten(input: unknown, field: string, fallback: string): string {
  const value = valueAt(input, [field]);
  return JSON.stringify(value === undefined ? fallback : value);
}

/** The fields the cross-field checks read; any of them may be missing when it did not parse. */
type CheckedFields = Partial<Pick<ParsedJob, 'handler' | 'lease' | 'heartbeatEvery' | 'timeout' | 'startLead' | 'checkpoints'>> & {
  readonly name: string;
};

/** Each field of a job that failed to parse, parsed on its own: those that parse, with defaults. */
function fieldsThatParse(jobShape: ReturnType<typeof jobShapeWith>, input: unknown): Partial<ParsedJob> {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(jobShape.shape)) {
    const result = schema.safeParse(valueAt(input, [key]));
    if (result.success) out[key] = result.data;
  }
  return out as Partial<ParsedJob>;
}

/**
 * The checks that read a job's fields together (name unique, handler registered, heartbeat
 * within the lease, timeout within an invocation), each run when the fields it reads parsed.
 */
function fieldIssues(job: CheckedFields, input: unknown, options: ParseJobsOptions, seen: Set<string>): JobConfigIssue[] {
  const issues: JobConfigIssue[] = [];
  if (seen.has(job.name)) issues.push({ job: job.name, field: 'name', value: job.name, message: 'duplicate job name' });
  seen.add(job.name);
  if (job.handler !== undefined && !options.handlers.includes(job.handler)) {
    issues.push({
      job: job.name,
      field: 'handler',
      value: job.handler,
      message: `unknown handler; registered: ${options.handlers.join(', ') || '(none)'}`,
    });
  }
  const writtenHeartbeat = valueAt(input, ['heartbeatEvery']);
  if (job.lease !== undefined && (job.heartbeatEvery !== undefined || writtenHeartbeat === undefined)) {
    const heartbeatEvery = job.heartbeatEvery ?? Math.floor(job.lease / 3);
    // Quote what the job wrote; when heartbeatEvery was left to its default, say it is lease / 3.
    const derived = writtenHeartbeat === undefined ? ' (the default, lease / 3)' : '';
    if (heartbeatEvery >= job.lease) {
      issues.push({
        job: job.name,
        field: 'heartbeatEvery',
        value: writtenHeartbeat,
        message: `must be shorter than lease ${asWritten(input, 'lease', '30s')}${derived}`,
      });
    } else if (heartbeatEvery < 1) {
      issues.push({
        job: job.name,
        field: 'heartbeatEvery',
        value: writtenHeartbeat,
        message: `must be at least 1 ms${writtenHeartbeat === undefined ? `: lease ${asWritten(input, 'lease', '30s')} / 3 is less` : ''}`,
      });
    }
  }
  // An attempt that cannot finish within one invocation would yield before its timeout every
  // time, and a yield without checkpoint progress spends the attempt: say so at synth instead.
  if (job.timeout === undefined || job.startLead === undefined || job.checkpoints === undefined) return issues;
  const workerTimeoutMs = options.workerTimeoutMs ?? DEFAULT_WORKER_TIMEOUT_MS;
  const fits = maxAttemptTimeoutMs(workerTimeoutMs, job.startLead);
  if (!job.checkpoints && job.timeout > fits) {
    const written = valueAt(input, ['timeout']);
    issues.push({
      job: job.name,
      field: 'timeout',
      value: written,
      message:
        `${written === undefined ? `the default timeout (${formatDuration(job.timeout)}) does not fit: ` : ''}` +
        `an attempt must fit in one worker invocation: at most ${formatDuration(fits)} with the worker timeout of ${formatDuration(workerTimeoutMs)} ` +
        `(minus the ${formatDuration(WORKER_YIELD_MARGIN_MS)} yield margin and a start wait of startLead + 1s); shorten it, raise the worker timeout (context key workerTimeoutSeconds), or set checkpoints: true if the handler checkpoints and resumes`,
    });
  }
  return issues;
}

function parseWith(
  jobShape: ReturnType<typeof jobShapeWith>,
  checks: ScheduleChecks,
  inputs: readonly unknown[],
  options: ParseJobsOptions,
): Job[] {
  const calendars = options.calendars ?? {};
  const issues: JobConfigIssue[] = calendarIssues(calendars);
  const jobs: Job[] = [];
  const seen = new Set<string>();
  inputs.forEach((input, index) => {
    const rawName = valueAt(input, ['name']);
    const label = typeof rawName === 'string' && rawName !== '' ? rawName : `#${index}`;
    const result = jobShape.safeParse(input);
    if (!result.success) {
      for (const issue of result.error.issues) {
        // zod reports an unknown key at its parent's path: name the key itself.
        if (issue.code === 'unrecognized_keys') {
          for (const key of issue.keys) {
            const path = [...issue.path, key];
            issues.push({ job: label, field: path.map(String).join('.'), value: valueAt(input, path), message: 'unknown field' });
          }
          continue;
        }
        const field = issue.path.map(String).join('.') || '(job)';
        issues.push({ job: label, field, value: valueAt(input, issue.path), message: issue.message });
      }
      // The checks across fields still run on the fields that parsed, so one synth names every
      // error of the job (a bad zone does not hide an unknown handler or a heartbeat past the lease).
      issues.push(...fieldIssues({ ...fieldsThatParse(jobShape, input), name: label }, input, options, seen));
      return;
    }
    const { exclude: entries, ...parsed } = result.data;
    const before = issues.length;
    const exclude = expandExclude(parsed.name, entries, calendars, issues);
    const job = exclude === undefined ? parsed : { ...parsed, exclude };
    if (issues.length === before) {
      for (const problem of checks.specProblems?.(slotSpecOf(job)) ?? []) {
        issues.push({ job: job.name, field: problem.field, value: valueAt(input, problem.field.split('.')), message: problem.message });
      }
    }
    const heartbeatEvery = job.heartbeatEvery ?? Math.floor(job.lease / 3);
    issues.push(...fieldIssues(job, input, options, seen));
    jobs.push({ ...job, heartbeatEvery });
  });
  if (issues.length > 0) throw new JobConfigError(issues);
  return jobs;
}

/** Every field a job definition may have (the README's table of defaults is checked against it). */
export function jobFieldNames(): string[] {
  return Object.keys(jobShapeWith(WORKER_SCHEDULE_CHECKS).shape);
}
