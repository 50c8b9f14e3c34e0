/**
 * `ops preview`: the slots of a schedule in [from, to), computed by exactly the planner's slot
 * code (slotsBetween with the job's SlotSpec). Needs no stack.
 *
 *   preview --schedule "<cron>" [--timezone IANA] [--dst-gap skip|shift] [--dst-overlap once|twice] --from ISO --to ISO [--json]
 *   preview --job NAME --from ISO --to ISO [--json]
 *
 * `--json`: a JSON array of ISO-8601 UTC strings. Otherwise a table: local time in the zone with
 * its offset, UTC time, and the DST mark of slots a DST transition affected.
 */
import { slotSpecOf } from '../../shared/core/plan.js';
import {
  DEFAULT_DST,
  dstMark,
  scheduleError,
  slotsBetween,
  timezoneError,
  type DstGapPolicy,
  type DstOverlapPolicy,
  type SlotSpec,
} from '../../shared/core/slots.js';
import { configuredJob, noExtraPositionals, parseCommand, parseInstant, stringOption } from './args.js';
import { EXIT_OK, printJson, printTable, UsageError, type OpsIo } from './io.js';

/** Most slots a preview lists; a wider window is refused rather than truncated. */
export const PREVIEW_MAX_SLOTS = 10_000;
const DAY = 86_400_000;

export const previewUsage =
  'preview (--schedule "<cron>" [--timezone IANA] [--dst-gap skip|shift] [--dst-overlap once|twice] | --job NAME) [--from ISO] [--to ISO] [--json]';

export interface PreviewSlot {
  readonly utc: string;
  readonly local: string;
  readonly dst?: string;
}

/** Slots of `spec` in [from, to): slotsBetween is (after, until], hence the 1 ms shifts. */
export function previewSlots(spec: SlotSpec, from: number, to: number): number[] {
  const slots = slotsBetween(spec, from - 1, to - 1, PREVIEW_MAX_SLOTS + 1);
  if (slots.length > PREVIEW_MAX_SLOTS) throw new UsageError('to', `the window holds more than ${PREVIEW_MAX_SLOTS} slots: narrow it`);
  return slots;
}

/** `2026-03-08 03:30:00 -04:00` in the given zone. */
export function localTime(slot: number, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'longOffset',
  }).formatToParts(new Date(slot));
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

export function specFromArgs(values: Record<string, unknown>, io: OpsIo): SlotSpec {
  const jobName = stringOption(values, 'job');
  if (jobName !== undefined) {
    for (const flag of ['schedule', 'timezone', 'dst-gap', 'dst-overlap']) {
      if (values[flag] !== undefined) throw new UsageError(flag, `--${flag} cannot be combined with --job (the job's own value is used)`);
    }
    return slotSpecOf(configuredJob(io, jobName));
  }
  const schedule = stringOption(values, 'schedule');
  if (schedule === undefined) throw new UsageError('schedule', '--schedule "<cron>" or --job NAME is required');
  const scheduleProblem = scheduleError(schedule);
  if (scheduleProblem) throw new UsageError('schedule', scheduleProblem);
  const timezone = stringOption(values, 'timezone') ?? 'UTC';
  const zoneProblem = timezoneError(timezone);
  if (zoneProblem) throw new UsageError('timezone', zoneProblem);
  const gap = oneOf<DstGapPolicy>(stringOption(values, 'dst-gap'), 'dst-gap', ['shift', 'skip'], DEFAULT_DST.gap);
  const overlap = oneOf<DstOverlapPolicy>(stringOption(values, 'dst-overlap'), 'dst-overlap', ['once', 'twice'], DEFAULT_DST.overlap);
  return { schedule, timezone, dst: { gap, overlap } };
}

export async function previewCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    schedule: { type: 'string' },
    timezone: { type: 'string' },
    'dst-gap': { type: 'string' },
    'dst-overlap': { type: 'string' },
    job: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
  });
  noExtraPositionals(positionals, 0);
  const spec = specFromArgs(values, io);
  const fromRaw = stringOption(values, 'from');
  const toRaw = stringOption(values, 'to');
  const from = fromRaw === undefined ? (io.now ?? Date.now)() : parseInstant(fromRaw, 'from');
  const to = toRaw === undefined ? from + DAY : parseInstant(toRaw, 'to');
  if (to <= from) throw new UsageError('to', `must be after from (${new Date(from).toISOString()})`);
  const slots = previewSlots(spec, from, to);

  if (values.json) {
    printJson(io, slots.map((slot) => new Date(slot).toISOString()));
    return EXIT_OK;
  }
  io.stdout(
    `${spec.schedule} in ${spec.timezone} (dst gap=${spec.dst.gap}, overlap=${spec.dst.overlap}), ` +
      `${new Date(from).toISOString()} to ${new Date(to).toISOString()}: ${slots.length} slot(s)`,
  );
  if (slots.length === 0) return EXIT_OK;
  printTable(
    io,
    ['LOCAL', 'UTC', 'DST'],
    slots.map((slot) => [localTime(slot, spec.timezone), new Date(slot).toISOString(), dstMark(spec, slot)]),
  );
  return EXIT_OK;
}
