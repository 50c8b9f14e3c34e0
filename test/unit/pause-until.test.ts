/** The pause's expiry rule (core/pause.ts) and how an operator's `until` is read (operations/pause.ts): a duration, a date-time, or a time of day on the job's clock. */
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

  it("a clock time still ahead today means today, on the job's clock", () => {
    // 12:00 UTC is 13:00 in Paris: 14:00 there is 13:00 UTC the same day; seconds may be given.
    expect(parsePauseUntil('14:00', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 6, 13, 0));
    expect(parsePauseUntil(' 13:00:30 ', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 6, 12, 0, 30));
    expect(parsePauseUntil('9:30', Date.UTC(2026, 11, 6, 7, 0), 'UTC')).toBe(Date.UTC(2026, 11, 6, 9, 30));
  });

  it("a clock time already past today means tomorrow in the job's zone", () => {
    // 12:30 in Paris was 11:30 UTC, before now: tomorrow's 12:30 there.
    expect(parsePauseUntil('12:30', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 7, 11, 30));
    // 21:00 in Tokyo now: its 09:05:30 is tomorrow morning there, midnight past UTC.
    expect(parsePauseUntil('09:05:30', NOW, 'Asia/Tokyo')).toBe(Date.UTC(2026, 11, 7, 0, 5, 30));
  });

  it('a clock time equal to now means tomorrow: a pause ends after now', () => {
    expect(parsePauseUntil('13:00', NOW, 'Europe/Paris')).toBe(Date.UTC(2026, 11, 7, 12, 0));
  });

  it("today is the job's date, not UTC's: late in the day west of UTC the date there is still yesterday", () => {
    // 02:00 UTC on 7 December is 18:00 on 6 December in Los Angeles: 20:00 there is in two hours.
    expect(parsePauseUntil('20:00', Date.UTC(2026, 11, 7, 2, 0), 'America/Los_Angeles')).toBe(Date.UTC(2026, 11, 7, 4, 0));
  });

  it('a clock time the DST gap skips today ends at the transition; once the gap has passed, it is tomorrow', () => {
    // 2027-03-28 in Paris: 02:00 CET jumps to 03:00 CEST at 01:00 UTC, so 02:30 is never shown that day.
    expect(parsePauseUntil('02:30', Date.UTC(2027, 2, 28, 0, 30), 'Europe/Paris')).toBe(Date.UTC(2027, 2, 28, 1, 0));
    // At 03:30 CEST the gap is behind: 02:30 CEST on the 29th.
    expect(parsePauseUntil('02:30', Date.UTC(2027, 2, 28, 1, 30), 'Europe/Paris')).toBe(Date.UTC(2027, 2, 29, 0, 30));
  });

  it('a clock time the DST overlap shows twice is its next showing: the first, or between the two the second', () => {
    // 2026-10-25 in Paris: 03:00 CEST goes back to 02:00 CET at 01:00 UTC; 02:30 shows at 00:30 and 01:30 UTC.
    expect(parsePauseUntil('02:30', Date.UTC(2026, 9, 25, 0, 0), 'Europe/Paris')).toBe(Date.UTC(2026, 9, 25, 0, 30));
    expect(parsePauseUntil('02:30', Date.UTC(2026, 9, 25, 0, 45), 'Europe/Paris')).toBe(Date.UTC(2026, 9, 25, 1, 30));
    // After both: tomorrow's, in CET.
    expect(parsePauseUntil('02:30', Date.UTC(2026, 9, 25, 1, 45), 'Europe/Paris')).toBe(Date.UTC(2026, 9, 26, 1, 30));
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
    expect(refusal('tomorrow')).toContain('a time of day such as 14:00');
    // Not a time of day: no hour 24, no minute 60, no second 60, no bare digits.
    for (const raw of ['24:00', '14:60', '14:00:60', '1400', '14:0', '14:00Z']) expect(refusal(raw)).toContain(`got "${raw}"`);
    expect(refusal('2026-02-30T10:00')).toContain('got "2026-02-30T10:00"');
    expect(refusal('-2h')).toContain('got "-2h"');
    expect(refusal('0s')).toContain('"0s" is no time from now');
    expect(refusal('2026-12-06T12:30')).toBe(
      'must be in the future: "2026-12-06T12:30" (read in Europe/Paris) is 2026-12-06T11:30:00.000Z, not after now (2026-12-06T12:00:00.000Z)',
    );
    expect(refusal('2026-12-06T12:00:00Z')).toContain('not after now');
  });
});
