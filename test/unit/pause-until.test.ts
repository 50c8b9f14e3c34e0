/** The pause's expiry rule (core/pause.ts) and how an operator's `until` is read (operations/pause.ts). */
import { describe, expect, it } from 'vitest';
import { pauseAt, pauseInForce } from '../../shared/core/pause.js';
import { parsePauseUntil, PauseRequestError } from '../../shared/operations/pause.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0);
const HOUR = 3_600_000;

describe('a pause in force', () => {
  it('holds before its until and not from it on; without one it holds until resumed', () => {
    const pause = { at: NOW - HOUR, by: 'dana', until: NOW + HOUR };
    expect(pauseInForce(pause, NOW)).toBe(true);
    expect(pauseInForce(pause, NOW + HOUR - 1)).toBe(true);
    expect(pauseInForce(pause, NOW + HOUR)).toBe(false);
    expect(pauseInForce({ at: NOW, by: 'dana' }, NOW + 1_000 * HOUR)).toBe(true);
    expect(pauseInForce(undefined, NOW)).toBe(false);
    expect(pauseAt(pause, NOW + 2 * HOUR)).toBeUndefined();
    expect(pauseAt(pause, NOW)).toBe(pause);
  });
});

describe('parsePauseUntil', () => {
  it('reads a duration from now', () => {
    expect(parsePauseUntil('2h', NOW, 'UTC')).toBe(NOW + 2 * HOUR);
    expect(parsePauseUntil(' 90m ', NOW, 'UTC')).toBe(NOW + 1.5 * HOUR);
    expect(parsePauseUntil('1d', NOW, 'Europe/Paris')).toBe(NOW + 24 * HOUR);
  });

  it("reads a date-time without an offset in the job's zone, and one with Z or an offset as written", () => {
    // 18:00 in Paris in December is 17:00 UTC.
    expect(parsePauseUntil('2026-12-06T18:00', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 6, 17, 0));
    expect(parsePauseUntil('2026-12-06 18:00:00', NOW, 'America/New_York')).toBe(Date.UTC(2026, 11, 6, 23, 0));
    expect(parsePauseUntil('2026-12-06T18:00:00Z', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 6, 18, 0));
    expect(parsePauseUntil('2026-12-06T18:00:00+05:30', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 6, 12, 30));
    // A bare date: its local midnight.
    expect(parsePauseUntil('2026-12-07', NOW, 'Asia/Tokyo')).toBe(Date.UTC(2026, 11, 6, 15, 0));
  });

  it('a local reading the clocks skip ends at the transition', () => {
    // 2027-03-28 02:30 does not exist in Paris: the clocks go from 02:00 to 03:00 (01:00 UTC).
    expect(parsePauseUntil('2027-03-28T02:30', NOW, 'Europe/Paris')).toBe(Date.UTC(2027, 2, 28, 1, 0));
  });

  it('refuses an unreadable, zero or past value, naming it as written and the field', () => {
    const refusal = (raw: string, zone = 'Europe/Paris') => {
      try {
        parsePauseUntil(raw, NOW, zone);
      } catch (error) {
        expect(error).toBeInstanceOf(PauseRequestError);
        expect((error as PauseRequestError).field).toBe('until');
        return (error as Error).message;
      }
      throw new Error(`"${raw}" was accepted`);
    };
    expect(refusal('tomorrow')).toContain('got "tomorrow"');
    expect(refusal('tomorrow')).toContain('Europe/Paris');
    expect(refusal('2026-02-30T10:00')).toContain('got "2026-02-30T10:00"');
    expect(refusal('-2h')).toContain('got "-2h"');
    expect(refusal('0s')).toContain('"0s" is no time from now');
    expect(refusal('2026-12-06T12:30')).toBe(
      'must be in the future: "2026-12-06T12:30" (read in Europe/Paris) is 2026-12-06T11:30:00.000Z, not after now (2026-12-06T12:00:00.000Z)',
    );
    expect(refusal('2026-12-06T12:00:00Z')).toContain('not after now');
  });
});
