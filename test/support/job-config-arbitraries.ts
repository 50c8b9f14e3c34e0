/**
 * fast-check generators of valid job inputs (DESIGN §4), shared by the schema tests. Each test
 * still chooses its own names, schedules, zones and duration forms: some run with fixed seeds,
 * so the exact choices (and their order) decide which configs they replay.
 */
import fc from 'fast-check';
import { durationMs } from '../../shared/schedule/duration.js';
import {
  DEFAULT_START_LEAD_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_WORKER_TIMEOUT_MS,
  maxAttemptTimeoutMs,
} from '../../shared/schedule/job-schema-core.js';

/** Schedules both schema tests draw from first; each adds its own after them. */
export const COMMON_SCHEDULES = [
  '* * * * *',
  '*/5 * * * *',
  '0 * * * *',
  '30 2 * * 1-5',
  '*/10 * * * * *',
  '0 0 12 1 * *',
  '15 3 L * *',
] as const;

/** A valid job name of 2 to `maxLength` characters: a letter or digit at both ends, hyphens allowed inside. */
export function jobNameArb(maxLength: number): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.stringMatching(/^[a-z0-9]$/),
      fc.stringMatching(new RegExp(`^[a-z0-9-]{0,${maxLength - 2}}$`)),
      fc.stringMatching(/^[a-z0-9]$/),
    )
    .map(([a, mid, z]) => `${a}${mid}${z}`);
}

/** A duration between `minMs` and `maxMs` in every form the schema reads: ms, `"12s"` and, with `minutes`, `"3m"`. */
export function durationArb(minMs: number, maxMs: number, { minutes }: { readonly minutes: boolean }): fc.Arbitrary<number | string> {
  const ms = fc.integer({ min: minMs, max: maxMs });
  const seconds = fc.integer({ min: Math.ceil(minMs / 1000), max: Math.floor(maxMs / 1000) }).map((s) => `${s}s`);
  if (!minutes) return fc.oneof(ms, seconds);
  // fast-check refuses min > max: a range holding no whole minute still offers its rounded-up one.
  const wholeMinutes = fc
    .integer({ min: Math.ceil(minMs / 60_000), max: Math.max(Math.ceil(minMs / 60_000), Math.floor(maxMs / 60_000)) })
    .map((m) => `${m}m`);
  return fc.oneof(ms, seconds, wholeMinutes);
}

export interface JobInputArbOptions {
  readonly names: fc.Arbitrary<string>;
  readonly schedules: readonly string[];
  /** The handler names the test registers with parseJobs. */
  readonly handlers: readonly string[];
  readonly timezones: readonly string[];
  /** Whether durations may also come as whole minutes. */
  readonly minutes: boolean;
}

const two = (n: number) => String(n).padStart(2, '0');

/** `{ every, phase? }`: 1 s to 1 day in whole seconds, in each form the schema reads; phase below every. */
export function intervalScheduleArb(): fc.Arbitrary<{ every: number | string; phase?: number | string }> {
  return fc
    .tuple(fc.integer({ min: 1, max: 86_400 }), fc.option(fc.nat(), { nil: undefined }), fc.constantFrom('s', 'ms', 'n'))
    .map(([every, phaseSeed, form]) => {
      const write = (sec: number) => (form === 's' ? `${sec}s` : form === 'ms' ? `${sec * 1000}ms` : sec * 1000);
      return phaseSeed === undefined ? { every: write(every) } : { every: write(every), phase: write(phaseSeed % every) };
    });
}

/**
 * `{ at }` in 2027, midday (no DST gap at noon in the test zones), local or with Z: always inside
 * the windows and outside the excluded dates windowFieldsArb makes.
 */
export function onceScheduleArb(): fc.Arbitrary<{ at: string }> {
  return fc
    .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), fc.integer({ min: 11, max: 13 }), fc.boolean())
    .map(([m, d, h, utc]) => ({ at: `2027-${two(m)}-${two(d)}T${two(h)}:${two((m * 7) % 60)}:00${utc ? 'Z' : ''}` }));
}

/** Valid job inputs: name, schedule and handler always, each other field present or left to its default. */
export function validJobInputArb(options: JobInputArbOptions) {
  const duration = (minMs: number, maxMs: number) => durationArb(minMs, maxMs, { minutes: options.minutes });
  return fc
    .record(
      {
        name: options.names,
        schedule: fc.oneof(
          {
            weight: 6,
            arbitrary: fc.constantFrom<string | { every: number | string; phase?: number | string } | { at: string }>(...options.schedules),
          },
          { weight: 2, arbitrary: intervalScheduleArb() },
          { weight: 1, arbitrary: onceScheduleArb() },
        ),
        handler: fc.constantFrom(...options.handlers),
        timezone: fc.constantFrom(...options.timezones),
        enabled: fc.boolean(),
        dst: fc.record({ gap: fc.constantFrom('shift', 'skip'), overlap: fc.constantFrom('once', 'twice') }, { requiredKeys: [] }),
        misfire: fc.record(
          {
            after: duration(0, 3_600_000),
            policy: fc.constantFrom('skip', 'latest', 'all'),
            maxPerTick: fc.integer({ min: 1, max: 1000 }),
          },
          { requiredKeys: [] },
        ),
        overlap: fc.constantFrom('forbid-skip', 'forbid-queue', 'coalesce', 'parallel'),
        shards: fc.integer({ min: 1, max: 100 }),
        lease: duration(3_000, 600_000),
        timeout: duration(1_000, 900_000),
        retry: fc.record(
          {
            maxAttempts: fc.integer({ min: 1, max: 10 }),
            backoff: fc.record(
              { base: duration(0, 10_000), max: duration(0, 600_000), jitter: fc.constantFrom('full', 'none') },
              { requiredKeys: [] },
            ),
          },
          { requiredKeys: [] },
        ),
        deadline: duration(0, 86_400_000),
        startLead: duration(0, 10_000),
        jitter: duration(0, 600_000),
        // A window around 2027 (every one-time slot is in 2027) and exclusions in 2029.
        startAt: fc.constantFrom('2026-01-01', '2026-06-01T08:00:00', '2026-06-01T08:00:00Z', '2026-06-01T08:00:00+05:30'),
        endAt: fc.constantFrom('2028-01-01', '2031-12-31T23:59:59', '2040-01-01T00:00:00Z'),
        exclude: fc.uniqueArray(
          fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 })).map(([m, d]) => `2029-${two(m)}-${two(d)}`),
          { maxLength: 12 },
        ),
        checkpoints: fc.boolean(),
      },
      { requiredKeys: ['name', 'schedule', 'handler'] },
    )
    .map(fitInvocation);
}

/**
 * A job whose attempt (timeout + start wait) would not fit in one default worker invocation is
 * valid only if it checkpoints: generated valid jobs say so.
 */
function fitInvocation<J extends { timeout?: number | string; startLead?: number | string; checkpoints?: boolean }>(job: J): J {
  const timeout = job.timeout === undefined ? DEFAULT_TIMEOUT_MS : (durationMs(job.timeout) ?? 0);
  const startLead = job.startLead === undefined ? DEFAULT_START_LEAD_MS : (durationMs(job.startLead) ?? 0);
  return timeout > maxAttemptTimeoutMs(DEFAULT_WORKER_TIMEOUT_MS, startLead) ? { ...job, checkpoints: true } : job;
}
