/**
 * Cron expressions for the slot engine: parsed into field sets, matched on local wall-clock time
 * ("wall ms", see local-time.ts). slots.ts maps wall times to instants per zone and DST policy.
 *
 * The dialect is Vixie cron (as in cronie), with seconds and a few extensions:
 * - 5 fields (minute hour day-of-month month day-of-week; second 0), or 6 with seconds first.
 * - Lists, ranges and steps; a list may repeat values or overlap (`0 9 * * 0,7`, `0-6,1,10`), as
 *   in Vixie, cronie, croniter and croner: the field is the union of its elements.
 * - Names (jan-dec, sun-sat); day-of-week 0 and 7 are Sunday, and a range may end on Sunday
 *   (`mon-sun`, `5-0`).
 * - Day-of-month / day-of-week, Vixie's rule: when either field starts with `*` (`*`, `*\/2`) or
 *   is `?`, a day must match BOTH; otherwise a day matching EITHER fires. So `0 16 *\/2 * sat` is
 *   "odd days that are Saturdays", `0 16 1,15 * sat` is "the 1st, the 15th and every Saturday".
 *   (croniter and robfig/cron would OR the first; cron-parser as well.)
 * - `L` (last day of the month) in day-of-month, `nL` (last weekday n of the month) and `n#k`
 *   (k-th weekday n; alone in its field) in day-of-week, `?` as `*` in either day field, and the
 *   @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @minutely, @secondly,
 *   @weekdays, @weekends aliases.
 * - Refused: `H` (hashed: without a seed it is random, which would make slots non-deterministic),
 *   `W`, and an expression that never matches a date (`0 0 31 4 *`).
 *
 * cron-parser is used only to expand each list element into a set of values; the matching is
 * done here. Importing this module brings the parser along: the worker never does.
 */
import { CronExpressionParser } from 'cron-parser';

import { daysIn, wallMs } from './local-time.js';

const SECOND = 1000;

/** A cron expression compiled into lookup tables for wall-clock matching. */
export interface CronPlan {
  /** nextX[v] = smallest allowed value >= v, or -1 (index max+1 is always -1). */
  readonly nextSecond: Int8Array;
  readonly nextMinute: Int8Array;
  readonly nextHour: Int8Array;
  readonly months: Uint8Array; // [1..12]
  readonly domValues: Uint8Array; // [1..31]
  readonly domLast: boolean; // `L`: last day of month
  readonly dowValues: Uint8Array; // [0..6], Sunday = 0
  readonly dowLast: Uint8Array; // [0..6], `nL`: last weekday n of the month
  readonly dowNth: number; // `n#k`: k (1..5), 0 = none
  /** Vixie's rule: OR the day fields when neither starts with `*`, else AND them. */
  readonly orDays: boolean;
  /** True when every day matches (fast path in the day loop). */
  readonly everyDay: boolean;
}

const PREDEFINED: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
  '@minutely': '0 * * * * *',
  '@secondly': '* * * * * *',
  '@weekdays': '0 0 0 * * 1-5',
  '@weekends': '0 0 0 * * 0,6',
};

const FIELD_NAMES_6 = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;
/** Each field's values, lowest and highest (day-of-week 7 is Sunday again, so its range is 0-6). */
const FIELD_RANGES_6: readonly (readonly [number, number])[] = [
  [0, 59],
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 6],
];
/** What each field counts within: a step as wide as the range fires once per this. */
const FIELD_PERIODS_6 = ['minute', 'hour', 'day', 'month', 'year', 'week'] as const;

/** Normalizes to 6 fields (seconds first) or returns a message. */
function normalizeFields(schedule: unknown): string[] | string {
  if (typeof schedule !== 'string') return 'schedule must be a string';
  const trimmed = schedule.trim();
  if (trimmed === '') return 'schedule is empty';
  if (trimmed.startsWith('@')) {
    const expanded = PREDEFINED[trimmed.toLowerCase()];
    if (expanded === undefined) {
      return `unknown alias "${trimmed}" (known: ${Object.keys(PREDEFINED).join(', ')})`;
    }
    return expanded.split(' ');
  }
  const atoms = trimmed.split(/\s+/);
  if (atoms.length !== 5 && atoms.length !== 6) {
    return `expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), got ${atoms.length}`;
  }
  return atoms.length === 5 ? ['0', ...atoms] : atoms;
}

function hasHash(field: string, index: number): boolean {
  // Month and day-of-week allow names (thu, mar...): remove them before looking for `H`.
  const stripped = index >= 4 ? field.replace(/[a-z]{3}/gi, '') : field;
  return stripped.includes('H');
}

const DOW_NAMES: Readonly<Record<string, number>> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };

/**
 * A day-of-week range that ends on Sunday (`mon-sun`, `5-0`) ends on 7 instead: cron-parser
 * refuses a range whose end is below its start, and reads 7 as Sunday.
 */
function sundayEndedRange(element: string): string {
  const m = /^([a-z]{3}|\d+)-([a-z]{3}|\d+)(\/\d+)?$/i.exec(element);
  if (!m) return element;
  const value = (s: string) => DOW_NAMES[s.toLowerCase()] ?? Number(s);
  const start = value(m[1] ?? '');
  const end = value(m[2] ?? '');
  return end === 0 && start > 0 ? `${m[1] ?? ''}-7${m[3] ?? ''}` : element;
}

/** A day field that starts with `*` or is `?` (Vixie's DOM_STAR / DOW_STAR). */
function startsWithStar(field: string): boolean {
  return field.startsWith('*') || field === '?';
}

interface FieldValues {
  readonly values: (number | string)[];
  nthDay: number;
}

/** The union of a field's list elements, each expanded by cron-parser, or a message. */
function expandField(fields: readonly string[], index: number): FieldValues | string {
  const field = fields[index] ?? '';
  const name = FIELD_NAMES_6[index];
  if (index === 5 && field.includes('#') && field.includes(',')) {
    return `${name} field "${field}": \`#\` cannot be combined with other values in a list`;
  }
  const out: FieldValues = { values: [], nthDay: 0 };
  const seen = new Set<number | string>();
  for (const raw of field.split(',')) {
    if (raw === '') return `${name} field "${field}": empty list element`;
    // A step wider than the field's range matches only its start (`*/61` and `*/60` are minute 0):
    // an author who wrote one meant something else, and cron-parser would take it silently.
    const step = /\/(\d+)$/.exec(raw)?.[1];
    const [low, high] = FIELD_RANGES_6[index] ?? [0, 0];
    if (step !== undefined && Number(step) > high - low) {
      return `${name} field "${field}": step ${step} is larger than the field's range ${low}-${high} (it would match only once per ${FIELD_PERIODS_6[index]}); use a single value instead`;
    }
    const element = index === 5 ? sundayEndedRange(raw) : raw;
    // The element alone, every other field a wildcard: cron-parser's errors then name only it.
    const probe = ['0', '*', '*', '*', '*', '*'];
    probe[index] = element;
    let parsed;
    try {
      parsed = CronExpressionParser.parse(probe.join(' '), { strict: false, tz: 'UTC', currentDate: 0 });
    } catch (err) {
      return `${name} field "${field}": ${err instanceof Error ? err.message : String(err)}`;
    }
    const f = [
      parsed.fields.second,
      parsed.fields.minute,
      parsed.fields.hour,
      parsed.fields.dayOfMonth,
      parsed.fields.month,
      parsed.fields.dayOfWeek,
    ][index];
    for (const v of (f?.values ?? []) as readonly (number | string)[]) {
      const key = index === 5 && typeof v === 'number' ? v % 7 : v;
      if (!seen.has(key)) {
        seen.add(key);
        out.values.push(key);
      }
    }
    if (index === 5) out.nthDay = parsed.fields.dayOfWeek.nthDay;
  }
  return out;
}

function compile(schedule: string): CronPlan | string {
  const fields = normalizeFields(schedule);
  if (typeof fields === 'string') return fields;
  // Every field is checked, so an expression with two bad fields names both at once.
  const expanded: FieldValues[] = [];
  const problems: string[] = [];
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i] ?? '';
    if (hasHash(f, i)) {
      problems.push(`${FIELD_NAMES_6[i]} field "${f}": hashed values (H) are not supported (they would make slots random)`);
      continue;
    }
    const values = expandField(fields, i);
    if (typeof values === 'string') problems.push(values);
    else expanded.push(values);
  }
  if (problems.length > 0) return problems.join('; ');
  const [second, minute, hour, dayOfMonth, month, dayOfWeek] = expanded as [
    FieldValues,
    FieldValues,
    FieldValues,
    FieldValues,
    FieldValues,
    FieldValues,
  ];
  const nextTable = (values: readonly (number | string)[], max: number): Int8Array => {
    const allowed = new Uint8Array(max + 2);
    for (const v of values) if (typeof v === 'number' && v >= 0 && v <= max) allowed[v] = 1;
    const next = new Int8Array(max + 2).fill(-1);
    let nxt = -1;
    for (let v = max; v >= 0; v--) {
      if (allowed[v] === 1) nxt = v;
      next[v] = nxt;
    }
    return next;
  };
  const months = new Uint8Array(13);
  for (const v of month.values) if (typeof v === 'number') months[v] = 1;
  const domValues = new Uint8Array(32);
  let domLast = false;
  for (const v of dayOfMonth.values) {
    if (typeof v === 'number') domValues[v] = 1;
    else if (v === 'L') domLast = true;
    else return `day-of-month value "${v}" is not supported`;
  }
  const dowValues = new Uint8Array(7);
  const dowLast = new Uint8Array(7);
  for (const v of dayOfWeek.values) {
    if (typeof v === 'number') dowValues[v % 7] = 1;
    else if (/^[0-7]L$/.test(v)) dowLast[Number(v.charAt(0)) % 7] = 1;
    else return `day-of-week value "${v}" is not supported`;
  }
  const dowNth = dayOfWeek.nthDay;
  const orDays = !startsWithStar(fields[3] ?? '*') && !startsWithStar(fields[5] ?? '*');
  const domAll = !domLast && domValues.slice(1).every((x) => x === 1);
  const dowAll = dowNth === 0 && dowValues.every((x) => x === 1);
  const plan: CronPlan = {
    nextSecond: nextTable(second.values, 59),
    nextMinute: nextTable(minute.values, 59),
    nextHour: nextTable(hour.values, 23),
    months,
    domValues,
    domLast,
    dowValues,
    dowLast,
    dowNth,
    orDays,
    everyDay: orDays ? domAll || dowAll : domAll && dowAll,
  };
  // An expression that can never fire (e.g. "0 0 31 4,6,9,11 *") is an error, not a silent no-op.
  // 2000-01-01 .. 2029: every month length and weekday combination occurs in that span.
  if (nextWall(plan, Date.UTC(2000, 0, 1), Date.UTC(2029, 0, 1)) < 0) {
    return `day-of-month "${fields[3] ?? ''}" never occurs in month "${fields[4] ?? ''}" (the expression never matches any date)`;
  }
  return plan;
}

const planCache = new Map<string, CronPlan | string>();

function cached(schedule: string): CronPlan | string {
  let plan = planCache.get(schedule);
  if (plan === undefined) {
    plan = compile(schedule);
    planCache.set(schedule, plan);
  }
  return plan;
}

/** The compiled expression; throws a RangeError naming it when it is invalid. */
export function cronPlanOf(schedule: string): CronPlan {
  const plan = cached(schedule);
  if (typeof plan === 'string') throw new RangeError(`invalid schedule "${schedule}": ${plan}`);
  return plan;
}

/** Returns undefined when the cron expression is valid, else a short human message of what is wrong. */
export function cronError(schedule: string): string | undefined {
  if (typeof schedule !== 'string') return 'schedule must be a string';
  const plan = cached(schedule);
  return typeof plan === 'string' ? plan : undefined;
}

/** Drops the compiled-expression cache (tests use it to prove determinism). */
export function clearCronCache(): void {
  planCache.clear();
}

function dayMatches(p: CronPlan, d: number, dow: number, dim: number): boolean {
  if (p.everyDay) return true;
  const domMatch = p.domValues[d] === 1 || (p.domLast && d === dim);
  const dowMatch = (p.dowValues[dow] === 1 && (p.dowNth === 0 || Math.ceil(d / 7) === p.dowNth)) || (p.dowLast[dow] === 1 && d + 7 > dim);
  return p.orDays ? domMatch || dowMatch : domMatch && dowMatch;
}

/**
 * The smallest matching wall time >= w (w a whole second), or -1 if there is none up to maxW.
 * Walks months, then days, then hours/minutes/seconds through the "next allowed" tables.
 */
export function nextWall(p: CronPlan, w: number, maxW: number): number {
  if (w > maxW) return -1;
  const dt = new Date(w);
  let y = dt.getUTCFullYear();
  let mo = dt.getUTCMonth() + 1;
  let d = dt.getUTCDate();
  let h = dt.getUTCHours();
  let mi = dt.getUTCMinutes();
  let s = dt.getUTCSeconds();
  let dow = dt.getUTCDay();
  const maxY = new Date(maxW).getUTCFullYear();
  let dim = daysIn(y, mo);
  /** Jumps to the first day of the next month; false once that is past maxW's year. */
  const toNextMonth = (): boolean => {
    dow = (dow + (dim - d + 1)) % 7;
    mo++;
    if (mo > 12) {
      mo = 1;
      y++;
      if (y > maxY) return false;
    }
    dim = daysIn(y, mo);
    d = 1;
    h = 0;
    mi = 0;
    s = 0;
    return true;
  };

  for (;;) {
    if (p.months[mo] !== 1) {
      if (!toNextMonth()) return -1;
      continue;
    }
    let nextDay = !dayMatches(p, d, dow, dim);
    if (!nextDay) {
      const hh = p.nextHour[h] ?? -1;
      if (hh < 0) {
        nextDay = true;
      } else {
        if (hh !== h) {
          h = hh;
          mi = 0;
          s = 0;
        }
        const mm = p.nextMinute[mi] ?? -1;
        if (mm < 0) {
          // Next allowed hour on this day.
          h++;
          mi = 0;
          s = 0;
          if (h > 23) nextDay = true;
          else continue;
        } else {
          if (mm !== mi) {
            mi = mm;
            s = 0;
          }
          const ss = p.nextSecond[s] ?? -1;
          if (ss >= 0) {
            const r = wallMs(y, mo, d, h, mi, ss);
            return r <= maxW ? r : -1;
          }
          mi++;
          s = 0;
          if (mi > 59) {
            mi = 0;
            h++;
            if (h > 23) nextDay = true;
            else continue;
          } else continue;
        }
      }
    }
    // nextDay: the month's last day goes on to the next month's first.
    if (d >= dim) {
      if (!toNextMonth()) return -1;
      continue;
    }
    d++;
    dow = (dow + 1) % 7;
    h = 0;
    mi = 0;
    s = 0;
  }
}

/** Whether a wall time (whole second) matches the plan. */
export function wallMatches(p: CronPlan, w: number): boolean {
  return w % SECOND === 0 && nextWall(p, w, w) === w;
}
