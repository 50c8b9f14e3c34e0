/**
 * `readableDuration`: what `npm start` prints for a measured duration reads in units a person
 * reads at a glance (`2 h 57 min`, `45 s`, `850 ms`), never as a count of milliseconds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readableDuration } from '../../shared/schedule/duration.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

describe('readableDuration', () => {
  it.each([
    [0, '0 ms'],
    [3, '3 ms'],
    [850, '850 ms'],
    [999.4, '999 ms'],
    [1_000, '1 s'],
    [1_530, '1.5 s'],
    [9_949, '9.9 s'],
    [45_210, '45 s'],
    [59_499, '59 s'],
    [2 * MIN, '2 min'],
    [2 * MIN + 5 * SEC, '2 min 5 s'],
    [10_643_367, '2 h 57 min'],
    [3 * HOUR, '3 h'],
    [DAY + HOUR + 61 * SEC, '1 d 1 h'],
    [-850, '-850 ms'],
  ])('%d ms reads "%s"', (ms, text) => {
    expect(readableDuration(ms)).toBe(text);
  });

  it('rounding up carries into the larger unit: never "60 s", "60 min" or "24 h"', () => {
    expect(readableDuration(999.6)).toBe('1 s');
    expect(readableDuration(9_960)).toBe('10 s');
    expect(readableDuration(59_600)).toBe('1 min');
    expect(readableDuration(HOUR - 20 * SEC)).toBe('1 h');
    expect(readableDuration(DAY - 10 * MIN)).toBe('1 d');
  });

  it('has at most two units, each a whole number in its range, and is within half its smaller unit of the value', () => {
    const units: Record<string, number> = { ms: 1, s: SEC, min: MIN, h: HOUR, d: DAY };
    const range: Record<string, number> = { ms: 1_000, s: 60, min: 60, h: 24 };
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * DAY }), (ms) => {
        const text = readableDuration(ms);
        expect(text).not.toMatch(/\d{5,} ms/);
        const parts = [...text.matchAll(/([\d.]+) (ms|s|min|h|d)/g)].map(([, n, unit]) => ({ n: Number(n), unit: unit! }));
        expect(parts.length).toBeGreaterThanOrEqual(1);
        expect(parts.length).toBeLessThanOrEqual(2);
        expect(parts.map((p) => `${p.n} ${p.unit}`).join(' ')).toBe(text);
        for (const p of parts) if (range[p.unit] !== undefined) expect(p.n).toBeLessThan(range[p.unit]!);
        const value = parts.reduce((sum, p) => sum + p.n * units[p.unit]!, 0);
        const smallest = units[parts.at(-1)!.unit]! * (Number.isInteger(parts.at(-1)!.n) ? 1 : 0.1);
        expect(Math.abs(value - ms)).toBeLessThanOrEqual(smallest / 2 + 1e-6);
      }),
    );
  });
});
