/**
 * Durations in job definitions: a number of milliseconds, or a string such as `500ms`, `30s`,
 * `5m`, `2h`, `1d`. Pure parsing, used by the config schema only.
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
