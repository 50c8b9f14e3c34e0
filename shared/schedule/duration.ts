/**
 * Durations in job definitions: a number of milliseconds, or a string such as `500ms`, `30s`,
 * `5m`, `2h`, `1d` (parsed for the config schema; `formatDuration` writes one back). And
 * `readableDuration`, for people reading a measured duration: `2 h 57 min`, `45 s`, `850 ms`.
 */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/** Milliseconds for a duration, or undefined when it is not one. */
export function durationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = DURATION_PATTERN.exec(value.trim());
  if (!match) return undefined;
  const [, amount, unit] = match;
  return Math.round(Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS]);
}

const UNITS_DESCENDING = [
  ['d', UNIT_MS.d],
  ['h', UNIT_MS.h],
  ['m', UNIT_MS.m],
  ['s', UNIT_MS.s],
] as const;

/** The shortest exact way to write `ms` as a duration: 5400000 → "90m", 90000 → "90s", 1500 → "1500ms". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms === 0) return '0s';
  for (const [unit, size] of UNITS_DESCENDING) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** The tiers of `readableDuration`: from this size on, a duration reads in `big` then `small`. */
const READABLE_TIERS = [
  { from: UNIT_MS.d, big: ['d', UNIT_MS.d], small: ['h', UNIT_MS.h] },
  { from: UNIT_MS.h, big: ['h', UNIT_MS.h], small: ['min', UNIT_MS.m] },
  { from: UNIT_MS.m, big: ['min', UNIT_MS.m], small: ['s', UNIT_MS.s] },
] as const;

/**
 * A measured duration as a person reads it, to two units at most, rounded to the smaller one:
 * 10643367 → "2 h 57 min", 45210 → "45 s", 1530 → "1.5 s", 850 → "850 ms", 90061000 → "1 d 1 h".
 * A zero second unit is left out ("3 h", "2 min"); a negative duration gets a minus sign.
 */
export function readableDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 0) return `-${readableDuration(-ms)}`;
  if (Math.round(ms) < UNIT_MS.s) return `${Math.round(ms)} ms`;
  if (ms < 10 * UNIT_MS.s && Math.round(ms / 100) < 100) return `${Math.round(ms / 100) / 10} s`;
  if (Math.round(ms / UNIT_MS.s) < 60) return `${Math.round(ms / UNIT_MS.s)} s`;
  // The first tier whose rounding keeps the duration in it (59 min 59.6 s is 1 h, not 60 min 0 s).
  for (const tier of READABLE_TIERS) {
    const [smallUnit, smallSize] = tier.small;
    const rounded = Math.round(ms / smallSize) * smallSize;
    if (rounded < tier.from) continue;
    const [bigUnit, bigSize] = tier.big;
    const big = Math.floor(rounded / bigSize);
    const rest = Math.round((rounded - big * bigSize) / smallSize);
    return rest === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${rest} ${smallUnit}`;
  }
  return `${Math.round(ms / UNIT_MS.s)} s`;
}
