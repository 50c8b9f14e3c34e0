/**
 * Date-times as job definitions write them (`schedule.at`, `startAt`, `endAt`, `exclude`), read
 * without a zone: pure text parsing, no Intl, so the worker's config check can use it without the
 * slot engine.
 *
 * A value is either an INSTANT (it carries `Z` or an offset, e.g. `2026-12-24T18:00:00+01:00`) or
 * a LOCAL date-time, read later in the job's time zone (`2026-12-24T18:00:00`, or a bare date
 * `2026-12-24` meaning its local midnight). Local values are carried as "wall ms": the wall-clock
 * reading encoded as if it were UTC, the representation the slot engine matches cron fields on.
 * Milliseconds are allowed (`toISOString()` output reads back); `schedule.at` must be a whole
 * second, since slots are.
 */

export type DateTimeValue = { readonly kind: 'instant'; readonly ms: number } | { readonly kind: 'local'; readonly wall: number };

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2})?)?$/;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days in month `m` (1-12) of year `y`. */
export function daysIn(y: number, m: number): number {
  return m === 2 && isLeap(y) ? 29 : (DAYS_IN_MONTH[m] ?? 31);
}

/** A wall-clock reading as ms, as if it were UTC (years 0-99 included: Date.UTC maps them to 19xx). */
export function wallMs(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  if (y >= 0 && y < 100) {
    const dt = new Date(ms);
    dt.setUTCFullYear(y);
    return dt.getTime();
  }
  return ms;
}

function validDate(y: number, mo: number, d: number): boolean {
  return mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(y, mo);
}

/** A date-time as written in a job definition, or undefined when it is not one. */
export function parseDateTime(text: unknown): DateTimeValue | undefined {
  if (typeof text !== 'string') return undefined;
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined;
  const wall = wallMs(y, mo, d, h, mi, s) + Number((m[7] ?? '').padEnd(3, '0'));
  const offset = m[8];
  if (offset === undefined) return { kind: 'local', wall };
  if (offset === 'Z') return { kind: 'instant', ms: wall };
  const sign = offset.startsWith('-') ? -1 : 1;
  const oh = Number(offset.slice(1, 3));
  const om = Number(offset.slice(4, 6));
  if (oh > 14 || om > 59) return undefined;
  return { kind: 'instant', ms: wall - sign * (oh * 3_600_000 + om * 60_000) };
}

/** What is wrong with a date-time, or undefined; `field` names it in the message. */
export function dateTimeError(text: unknown, field: string): string | undefined {
  if (parseDateTime(text) !== undefined) return undefined;
  return (
    `${field} must be a local date-time such as "2026-12-24T18:00:00" (read in the job's timezone), ` +
    'a date such as "2026-12-24" (its local midnight) or an instant with an offset such as "2026-12-24T18:00:00Z"'
  );
}

/** Wall ms of a local date's midnight (`2026-12-25`), or undefined when it is not a real date. */
export function parseLocalDate(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = DATE_ONLY.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return validDate(y, mo, d) ? wallMs(y, mo, d, 0, 0, 0) : undefined;
}
