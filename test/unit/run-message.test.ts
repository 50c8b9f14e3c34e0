/**
 * Run message validation (DESIGN §8): a malformed message or an unknown job is a coded failure,
 * logged and left for the DLQ; it never throws (a throw would fail the whole SQS batch).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseJobs } from '../../shared/schedule/job-schema.js';
import { jobsByName } from '../../shared/config.js';
import { messageFor, parseRunMessage } from '../../shared/core/run-message.js';
import { MAX_FENCEABLE_SLOT } from '../../shared/core/fence.js';
import { runKeyOf } from '../../shared/core/vocabulary.js';
import { OverlapPolicy } from '../../shared/schedule/job-schema-core.js';

const JOBS = jobsByName(
  parseJobs(
    [
      { name: 'solo', schedule: '* * * * *', handler: 'h' },
      { name: 'sharded', schedule: '* * * * *', handler: 'h', shards: 3 },
    ],
    { handlers: ['h'] },
  ),
);
const SLOT = Date.UTC(2024, 0, 15, 12, 0);
const body = (value: unknown) => JSON.stringify(value);
const valid = (overrides: Record<string, unknown> = {}) => ({
  v: 1,
  job: 'solo',
  slot: SLOT,
  shard: 0,
  runKey: runKeyOf('solo', SLOT, 0, 1),
  ...overrides,
});
const CODES = ['MALFORMED', 'UNSUPPORTED_VERSION', 'UNKNOWN_JOB', 'INCONSISTENT'];

describe('parseRunMessage', () => {
  it('accepts a valid message and resolves its job definition', () => {
    const r = parseRunMessage(body(valid()), JOBS);
    expect(r).toEqual({ ok: true, message: valid(), job: JOBS.get('solo') });
  });

  it('accepts a sharded message whose runKey carries the shard suffix', () => {
    const r = parseRunMessage(body(valid({ job: 'sharded', shard: 2, runKey: `sharded@${new Date(SLOT).toISOString()}#2` })), JOBS);
    expect(r.ok).toBe(true);
  });

  it('drops unknown extra fields from the returned message (no untrusted data flows on)', () => {
    const r = parseRunMessage(body({ ...valid(), extra: 'x' }), JOBS);
    expect(r.ok && r.message).toEqual(valid());
  });

  it.each([
    ['not JSON', '{"v":1,'],
    ['empty body', ''],
    ['JSON array', body([valid()])],
    ['JSON null', 'null'],
    ['JSON string', body('solo@2024')],
    ['JSON number', '42'],
  ])('%s → MALFORMED', (_label, text) => {
    const r = parseRunMessage(text, JOBS);
    expect(r).toMatchObject({ ok: false, code: 'MALFORMED' });
  });

  it.each(['v', 'job', 'slot', 'shard', 'runKey'])('missing field %s → MALFORMED naming the field', (field) => {
    const message: Record<string, unknown> = valid();
    delete message[field];
    const r = parseRunMessage(body(message), JOBS);
    expect(r).toMatchObject({ ok: false, code: 'MALFORMED' });
    expect(!r.ok && r.reason).toContain(`"${field}"`);
  });

  it.each([
    ['v as string', { v: '1' }],
    ['empty job', { job: '' }],
    ['slot as ISO string', { slot: new Date(SLOT).toISOString() }],
    ['negative slot', { slot: -1 }],
    ['fractional slot', { slot: SLOT + 0.5 }],
    ['negative shard', { shard: -1 }],
    ['fractional shard', { shard: 0.5 }],
    ['runKey as number', { runKey: 7 }],
  ])('wrongly typed field (%s) → MALFORMED', (_label, overrides) => {
    expect(parseRunMessage(body(valid(overrides)), JOBS)).toMatchObject({ ok: false, code: 'MALFORMED' });
  });

  it('v=2 (a newer producer) → UNSUPPORTED_VERSION, not a misread', () => {
    const r = parseRunMessage(body(valid({ v: 2 })), JOBS);
    expect(r).toMatchObject({ ok: false, code: 'UNSUPPORTED_VERSION' });
  });

  it('unknown job (e.g. removed from the config while messages were in flight) → UNKNOWN_JOB', () => {
    const r = parseRunMessage(body(valid({ job: 'ghost', runKey: runKeyOf('ghost', SLOT, 0, 1) })), JOBS);
    expect(r).toMatchObject({ ok: false, code: 'UNKNOWN_JOB' });
  });

  it('a job name inherited from Object.prototype is still unknown', () => {
    for (const job of ['__proto__', 'constructor', 'toString']) {
      expect(parseRunMessage(body(valid({ job, runKey: runKeyOf(job, SLOT, 0, 1) })), JOBS)).toMatchObject({
        ok: false,
        code: 'UNKNOWN_JOB',
      });
    }
  });

  it('shard out of range for the job → INCONSISTENT (a message for a shard that does not exist)', () => {
    expect(parseRunMessage(body(valid({ shard: 1, runKey: runKeyOf('solo', SLOT, 1, 2) })), JOBS)).toMatchObject({
      ok: false,
      code: 'INCONSISTENT',
    });
    expect(parseRunMessage(body(valid({ job: 'sharded', shard: 3, runKey: runKeyOf('sharded', SLOT, 3, 3) })), JOBS)).toMatchObject({
      ok: false,
      code: 'INCONSISTENT',
    });
  });

  it('a run created under an earlier shard count validates after shards change 1 -> 3 and 3 -> 1: its message carries its own count', () => {
    // 'solo' is configured with 1 shard, 'sharded' with 3: each message is from a run of the other count.
    const underThree = messageFor({ job: 'solo', slot: SLOT, shard: 2, shards: 3, runKey: runKeyOf('solo', SLOT, 2, 3) });
    expect(parseRunMessage(body(underThree), JOBS)).toMatchObject({ ok: true, message: { shard: 2, shards: 3 } });
    const underOne = messageFor({ job: 'sharded', slot: SLOT, shard: 0, shards: 1, runKey: runKeyOf('sharded', SLOT, 0, 1) });
    expect(parseRunMessage(body(underOne), JOBS)).toMatchObject({ ok: true, message: { shard: 0, shards: 1 } });
    // The run's own count is still checked: its shard within it, its key of that count.
    expect(parseRunMessage(body({ ...underThree, shards: 2 }), JOBS)).toMatchObject({ ok: false, code: 'INCONSISTENT' });
    expect(parseRunMessage(body({ ...underOne, shards: 3 }), JOBS)).toMatchObject({ ok: false, code: 'INCONSISTENT' });
    for (const shards of [0, -1, 1.5, '3', null])
      expect(parseRunMessage(body({ ...underOne, shards }), JOBS)).toMatchObject({ ok: false, code: 'MALFORMED' });
  });

  it('runKey that does not match (job, slot, shard) → INCONSISTENT: the idempotency key must never disagree with the run', () => {
    for (const runKey of [
      runKeyOf('solo', SLOT + 60_000, 0, 1),
      runKeyOf('sharded', SLOT, 0, 3),
      `${runKeyOf('solo', SLOT, 0, 1)}#0`,
      'solo',
      '',
    ]) {
      expect(parseRunMessage(body(valid({ runKey })), JOBS)).toMatchObject({ ok: false, code: 'INCONSISTENT' });
    }
    // Sharded job without the shard suffix.
    expect(
      parseRunMessage(body(valid({ job: 'sharded', shard: 1, runKey: `sharded@${new Date(SLOT).toISOString()}` })), JOBS),
    ).toMatchObject({ ok: false, code: 'INCONSISTENT' });
  });

  // Regression: a safe-integer slot beyond the Date range (> 8.64e15) passed the slot check and
  // then runKeyOf → new Date(slot).toISOString() threw RangeError: one such poison message
  // rejected processBatch's Promise.all and failed the whole SQS batch.
  it('a slot beyond the Date range (9e15) is MALFORMED, not a thrown RangeError', () => {
    expect(() => parseRunMessage(body(valid({ slot: 9e15 })), JOBS)).not.toThrow();
    expect(parseRunMessage(body(valid({ slot: 9e15 })), JOBS)).toMatchObject({ ok: false, code: 'MALFORMED' });
  });

  const checkTotal = (text: string) => {
    let r;
    try {
      r = parseRunMessage(text, JOBS);
    } catch (error) {
      throw new Error(`parseRunMessage threw on ${JSON.stringify(text).slice(0, 200)}: ${String(error)}`);
    }
    if (r.ok) {
      expect(JOBS.has(r.message.job)).toBe(true);
      expect(r.message.runKey).toBe(runKeyOf(r.message.job, r.message.slot, r.message.shard, r.job.shards));
    } else {
      expect(CODES).toContain(r.code);
      expect(typeof r.reason).toBe('string');
      expect(r.reason.length).toBeGreaterThan(0);
    }
  };

  it('property: arbitrary strings never throw; the result is ok or a coded failure', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), checkTotal), { numRuns: 1000 });
  });

  it('property: arbitrary JSON values never throw; the result is ok or a coded failure', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => checkTotal(JSON.stringify(value) ?? 'null')),
      { numRuns: 1000 },
    );
  });

  it('property: near-valid messages (fields drawn from plausible and hostile values) never throw', () => {
    const slotArb = fc.oneof(
      fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => ms - (ms % 1000)),
      fc.constantFrom(-1, 0, 0.5, Number.MAX_SAFE_INTEGER + 2, 1e308, '1', null),
    );
    const messageArb = fc.record(
      {
        v: fc.constantFrom(1, 2, 0, '1', null),
        job: fc.constantFrom('solo', 'sharded', 'ghost', '', 7),
        slot: slotArb,
        shard: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.constantFrom(0.5, '0', null)),
        runKey: fc.oneof(fc.string(), fc.constant(undefined)),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(messageArb, fc.boolean(), (message, fixKey) => {
        const m: Record<string, unknown> = { ...message };
        if (
          fixKey &&
          typeof m.job === 'string' &&
          typeof m.slot === 'number' &&
          typeof m.shard === 'number' &&
          Number.isSafeInteger(m.slot) &&
          m.slot >= 0
        ) {
          const def = JOBS.get(m.job);
          if (def && Number.isInteger(m.shard) && m.shard >= 0) m.runKey = runKeyOf(m.job, m.slot, m.shard, def.shards);
        }
        checkTotal(JSON.stringify(m));
      }),
      { numRuns: 1000 },
    );
  });
});

describe("parseRunMessage: each field at its bounds, and a manual run's overlap override", () => {
  const refused = (value: unknown) => parseRunMessage(typeof value === 'string' ? value : body(value), JOBS);

  it('a body that is JSON but not an object is MALFORMED, saying so', () => {
    for (const v of ['5', '"x"', '[1]', 'null'])
      expect(refused(v), v).toEqual({ ok: false, code: 'MALFORMED', reason: 'body is not a JSON object' });
    expect(refused('{')).toEqual({ ok: false, code: 'MALFORMED', reason: 'body is not JSON' });
  });

  it('slot 0 and the largest fenceable slot are accepted; one past either end, or a fraction, is not', () => {
    for (const slot of [0, MAX_FENCEABLE_SLOT])
      expect(refused(valid({ slot, runKey: runKeyOf('solo', slot, 0, 1) })).ok, String(slot)).toBe(true);
    for (const slot of [-1, MAX_FENCEABLE_SLOT + 1, SLOT + 0.5, String(SLOT)])
      expect(refused(valid({ slot })), String(slot)).toMatchObject({
        ok: false,
        code: 'MALFORMED',
        reason: expect.stringContaining('"slot"'),
      });
  });

  it('a shard that is negative, fractional or not a number is MALFORMED', () => {
    for (const shard of [-1, 0.5, '0'])
      expect(refused(valid({ shard })), String(shard)).toMatchObject({
        ok: false,
        code: 'MALFORMED',
        reason: 'field "shard" must be a non-negative integer',
      });
  });

  it('an unknown job names the run it orphans; an inconsistent runKey names both keys', () => {
    expect(refused(valid({ job: 'gone', runKey: runKeyOf('gone', SLOT, 0, 1) }))).toEqual({
      ok: false,
      code: 'UNKNOWN_JOB',
      reason: 'job "gone" is not configured',
      orphan: { job: 'gone', slot: SLOT, shard: 0 },
    });
    expect(refused(valid({ runKey: 'x' }))).toEqual({
      ok: false,
      code: 'INCONSISTENT',
      reason: `runKey "x" does not match "${runKeyOf('solo', SLOT, 0, 1)}"`,
    });
  });

  it("a manual run's overlap override is applied to the job the worker runs; the job's own policy, or none, leaves it as configured", () => {
    const solo = JOBS.get('solo')!;
    const other = solo.overlap === 'replace' ? 'forbid-skip' : 'replace';
    const overridden = refused(valid({ overlap: other }));
    // Strict: a job or message carrying `overlap: undefined` would run as if it had no policy.
    expect(overridden).toStrictEqual({ ok: true, message: valid({ overlap: other }), job: { ...solo, overlap: other } });
    const same = refused(valid({ overlap: solo.overlap }));
    expect(same).toStrictEqual({ ok: true, message: valid({ overlap: solo.overlap }), job: solo });
    expect(refused(valid())).toStrictEqual({ ok: true, message: valid(), job: solo });
    const policies = Object.values(OverlapPolicy).join(', ');
    for (const overlap of ['sometimes', 3, null])
      expect(refused(valid({ overlap })), String(overlap)).toEqual({
        ok: false,
        code: 'MALFORMED',
        reason: `field "overlap" must be one of ${policies}`,
      });
  });

  it("messageFor carries a run's overlap override, and none when it has none: it parses back to the same message", () => {
    const run = { job: 'solo', slot: SLOT, shard: 0, runKey: runKeyOf('solo', SLOT, 0, 1) };
    expect(messageFor(run)).toEqual(valid());
    expect(messageFor({ ...run, overlap: 'replace' })).toEqual(valid({ overlap: 'replace' }));
    expect(refused(body(messageFor({ ...run, overlap: 'replace' })))).toMatchObject({ ok: true, message: valid({ overlap: 'replace' }) });
  });
});
