/**
 * `ops preview`: the slots of a schedule, computed by exactly the planner's slot code
 * (slotsBetween / nextSlotAfter with the job's SlotSpec). Needs no stack.
 *
 *   preview --schedule "<cron>" [--timezone IANA] [--dst-gap skip|shift] [--dst-overlap once|twice] [range] [--json]
 *   preview --job NAME [range] [--json]            (the team's jobs and the example jobs)
 *   preview --definition '<job entry as JSON>' [range] [--json]
 *
 * range: `--from ISO --to ISO` lists the slots in [from, to) (`--limit N` caps them); without
 * `--to`, the next N slots at or after `--from` (default now), N = `--limit` (default 10).
 *
 * `--definition` takes any job entry (every field of shared/jobs.ts: interval and one-time
 * schedules, window, exclusions with the configured calendars, jitter) and validates it like the
 * config: a bad field exits 2 with one line naming it. `name` and `handler` may be left out.
 *
 * Jitter: the window selects SLOTS; what is listed is when each one FIRES (slot + its jitter
 * offset, capped below the next slot, as the planner computes it), in firing order, which is slot
 * order. `--json` prints a JSON array of ISO-8601 UTC fire times (the slots themselves when the job
 * has no jitter). The table shows the fire time in the zone with its offset, in UTC, the slot
 * (column SLOT, only with jitter) and the DST mark of slots a DST transition affected.
 */
import { calendars as configuredCalendars } from '../../shared/jobs.js';
import { handlers } from '../../shared/handlers/index.js';
import { formatDuration } from '../../shared/schedule/duration.js';
import { fireTimeOf, type JitterFields } from '../../shared/schedule/jitter.js';
import { JobConfigError, parseJobs } from '../../shared/schedule/job-schema.js';
import {
  DEFAULT_DST,
  describeSchedule,
  dstMark,
  nextSlotAfter,
  scheduleError,
  slotSpecOf,
  slotsBetween,
  timezoneError,
  type DstGapPolicy,
  type DstOverlapPolicy,
  type SlotSpec,
} from '../../shared/schedule/slots.js';
import { configuredJob, noExtraPositionals, parseCommand, parseInstant, parsePositive, stringOption } from './args.js';
import { EXIT_OK, printJson, printTable, UsageError, type OpsIo } from './io.js';

/** Most slots a preview lists; a wider window is refused rather than truncated. */
export const PREVIEW_MAX_SLOTS = 10_000;
/** Slots listed without `--to`. */
export const PREVIEW_DEFAULT_LIMIT = 10;

export const previewUsage =
  'preview (--schedule "<cron>" [--timezone IANA] [--dst-gap skip|shift] [--dst-overlap once|twice] | --job NAME | --definition JSON) ' +
  '[--from ISO] [--to ISO] [--limit N] [--json]';

/** What a preview lists: the slots of `spec`, each fired with the job's jitter. */
export interface PreviewTarget {
  readonly spec: SlotSpec;
  readonly jitter: JitterFields;
}

export interface PreviewEntry {
  readonly slot: number;
  /** When the run fires: the slot, plus the jitter offset if any. */
  readonly fireAt: number;
}

/** Slots of `spec` in [from, to): slotsBetween is (after, until], hence the 1 ms shifts. */
export function previewSlots(spec: SlotSpec, from: number, to: number, limit?: number): number[] {
  const max = limit ?? PREVIEW_MAX_SLOTS;
  const slots = slotsBetween(spec, from - 1, to - 1, max + 1);
  if (slots.length > max) {
    if (limit !== undefined) return slots.slice(0, limit);
    throw new UsageError('to', `the window holds more than ${PREVIEW_MAX_SLOTS} slots: narrow it or pass --limit`);
  }
  return slots;
}

/** The first `count` slots at or after `from`. */
export function nextSlots(spec: SlotSpec, from: number, count: number): number[] {
  const out: number[] = [];
  for (let after = from - 1; out.length < count; ) {
    const next = nextSlotAfter(spec, after);
    if (next === undefined) break;
    out.push(next);
    after = next;
  }
  return out;
}

/** Each slot with its fire time, capped below the next slot exactly as the planner caps it. */
export function withFireTimes(target: PreviewTarget, slots: readonly number[]): PreviewEntry[] {
  return slots.map((slot, i) => ({ slot, fireAt: fireTimeOf(target.jitter, slot, slots[i + 1] ?? nextSlotAfter(target.spec, slot)) }));
}

/**
 * The next `count` fire times at or after `now`, in firing order. With jitter the slot just
 * before `now` may still fire after it (its offset is capped below the next slot, so no older one
 * can), hence the one look back over (now - jitter, now).
 */
export function nextFires(target: PreviewTarget, now: number, count: number): PreviewEntry[] {
  const jitter = target.jitter.jitter ?? 0;
  const before = jitter > 0 ? slotsBetween(target.spec, now - jitter, now - 1).at(-1) : undefined;
  const slots = [...(before === undefined ? [] : [before]), ...nextSlots(target.spec, now, count)];
  return withFireTimes(target, slots)
    .filter((e) => e.fireAt >= now)
    .slice(0, count);
}

/**
 * One formatter per zone, kept: building an Intl.DateTimeFormat costs far more than formatting
 * with one, and a page formats hundreds of times in a few zones.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** `2026-03-08 03:30:00 -04:00` in the given zone. */
export function localTime(slot: number, timezone: string): string {
  const parts = formatterOf(timezone).formatToParts(new Date(slot));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  const zone = part('timeZoneName').replace(/^GMT/, '');
  const offset = zone === '' ? '+00:00' : zone;
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}:${part('second')} ${offset}`;
}

function oneOf<T extends string>(raw: string | undefined, field: string, allowed: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new UsageError(field, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** Stands in for a definition that names no handler: preview never runs it. */
const PREVIEW_HANDLER = '(preview)';

/** A job entry given as JSON, validated by the config's own parser; every issue goes into the one-line usage error. */
export function definitionTarget(raw: string, io: OpsIo): PreviewTarget {
  let entry: unknown;
  try {
    entry = JSON.parse(raw);
  } catch (error) {
    throw new UsageError('definition', `not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new UsageError('definition', 'expected one job entry as a JSON object, e.g. {"schedule":{"every":"90s"}}');
  }
  const given = entry as Record<string, unknown>;
  const input = { name: 'preview', ...given, handler: 'handler' in given ? given.handler : PREVIEW_HANDLER };
  try {
    const [job] = parseJobs([input], {
      handlers: [...Object.keys(handlers), PREVIEW_HANDLER],
      calendars: io.calendars ?? configuredCalendars,
    });
    return { spec: slotSpecOf(job!), jitter: job! };
  } catch (error) {
    if (!(error instanceof JobConfigError)) throw error;
    // One line still, but with every issue: the first names the field, the others follow it.
    const [first, ...more] = error.issues;
    const value = (v: unknown) => (v === undefined ? '' : ` (value: ${JSON.stringify(v)})`);
    const others = more.map((i) => `; also field "${i.field}": ${i.message}${value(i.value)}`).join('');
    throw new UsageError(first?.field, `${first?.message ?? error.message}${value(first?.value)}${others}`);
  }
}

export function targetFromArgs(values: Record<string, unknown>, io: OpsIo): PreviewTarget {
  const jobName = stringOption(values, 'job');
  const definition = stringOption(values, 'definition');
  if (jobName !== undefined && definition !== undefined) throw new UsageError('definition', '--definition cannot be combined with --job');
  if (jobName !== undefined || definition !== undefined) {
    const by = jobName !== undefined ? 'job' : 'definition';
    for (const flag of ['schedule', 'timezone', 'dst-gap', 'dst-overlap']) {
      if (values[flag] !== undefined)
        throw new UsageError(flag, `--${flag} cannot be combined with --${by} (the ${by}'s own value is used)`);
    }
    if (definition !== undefined) return definitionTarget(definition, io);
    // Preview reads no stack, so it cannot know whether the target runs the example jobs: it
    // knows them always (their definitions are in the repository like the team's).
    const job = configuredJob({ ...io, exampleJobs: true }, jobName);
    return { spec: slotSpecOf(job), jitter: job };
  }
  const schedule = stringOption(values, 'schedule');
  if (schedule === undefined) throw new UsageError('schedule', '--schedule "<cron>", --job NAME or --definition JSON is required');
  const scheduleProblem = scheduleError(schedule);
  if (scheduleProblem) throw new UsageError('schedule', scheduleProblem);
  const timezone = stringOption(values, 'timezone') ?? 'UTC';
  const zoneProblem = timezoneError(timezone);
  if (zoneProblem) throw new UsageError('timezone', zoneProblem);
  const gap = oneOf<DstGapPolicy>(stringOption(values, 'dst-gap'), 'dst-gap', ['shift', 'skip'], DEFAULT_DST.gap);
  const overlap = oneOf<DstOverlapPolicy>(stringOption(values, 'dst-overlap'), 'dst-overlap', ['once', 'twice'], DEFAULT_DST.overlap);
  return { spec: { schedule, timezone, dst: { gap, overlap } }, jitter: { name: 'preview' } };
}

export async function previewCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    schedule: { type: 'string' },
    timezone: { type: 'string' },
    'dst-gap': { type: 'string' },
    'dst-overlap': { type: 'string' },
    job: { type: 'string' },
    definition: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    limit: { type: 'string' },
  });
  noExtraPositionals(positionals, 0);
  const target = targetFromArgs(values, io);
  const { spec } = target;
  const fromRaw = stringOption(values, 'from');
  const toRaw = stringOption(values, 'to');
  const limitRaw = stringOption(values, 'limit');
  const limit =
    limitRaw === undefined ? undefined : parsePositive(limitRaw, 'limit', PREVIEW_DEFAULT_LIMIT, { integer: true, max: PREVIEW_MAX_SLOTS });
  const from = fromRaw === undefined ? (io.now ?? Date.now)() : parseInstant(fromRaw, 'from');
  let slots: number[];
  let range: string;
  if (toRaw === undefined) {
    const count = limit ?? PREVIEW_DEFAULT_LIMIT;
    slots = nextSlots(spec, from, count);
    range = `the next ${count} from ${new Date(from).toISOString()}`;
  } else {
    const to = parseInstant(toRaw, 'to');
    if (to <= from) throw new UsageError('to', `must be after from (${new Date(from).toISOString()})`);
    slots = previewSlots(spec, from, to, limit);
    range = `${new Date(from).toISOString()} to ${new Date(to).toISOString()}`;
  }
  const entries = withFireTimes(target, slots);

  if (values.json) {
    printJson(
      io,
      entries.map((e) => new Date(e.fireAt).toISOString()),
    );
    return EXIT_OK;
  }
  const jittered = (target.jitter.jitter ?? 0) > 0;
  io.stdout(
    `${describeSchedule(spec)} in ${spec.timezone} (dst gap=${spec.dst.gap}, overlap=${spec.dst.overlap}` +
      `${jittered ? `, jitter ${formatDuration(target.jitter.jitter ?? 0)}: fire times listed, slot alongside` : ''}), ${range}: ${slots.length} slot(s)`,
  );
  if (entries.length === 0) return EXIT_OK;
  const local = (e: PreviewEntry) => localTime(e.fireAt, spec.timezone);
  const utc = (e: PreviewEntry) => new Date(e.fireAt).toISOString();
  if (jittered) {
    printTable(
      io,
      ['LOCAL', 'UTC', 'SLOT', 'DST'],
      entries.map((e) => [local(e), utc(e), new Date(e.slot).toISOString(), dstMark(spec, e.slot)]),
    );
  } else {
    printTable(
      io,
      ['LOCAL', 'UTC', 'DST'],
      entries.map((e) => [local(e), utc(e), dstMark(spec, e.slot)]),
    );
  }
  return EXIT_OK;
}
