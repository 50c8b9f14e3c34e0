/**
 * Run message validation (DESIGN §8): a malformed message or an unknown job is a coded failure,
 * logged and left for the DLQ; it never throws (a throw would fail the whole SQS batch).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseJobs } from '../../shared/core/job-schema.js';
import { jobsByName } from '../../shared/config.js';
import { parseRunMessage } from '../../shared/core/run-message.js';
import { runKeyOf } from '../../shared/core/vocabulary.js';

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
const valid = (overrides: Record<string, unknown> = {}) => ({ v: 1, job: 'solo', slot: SLOT, shard: 0, runKey: runKeyOf('solo', SLOT, 0, 1), ...overrides });
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
      expect(parseRunMessage(body(valid({ job, runKey: runKeyOf(job, SLOT, 0, 1) })), JOBS)).toMatchObject({ ok: false, code: 'UNKNOWN_JOB' });
    }
  });

  it('shard out of range for the job → INCONSISTENT (a message for a shard that does not exist)', () => {
    expect(parseRunMessage(body(valid({ shard: 1, runKey: runKeyOf('solo', SLOT, 1, 2) })), JOBS)).toMatchObject({ ok: false, code: 'INCONSISTENT' });
    expect(
      parseRunMessage(body(valid({ job: 'sharded', shard: 3, runKey: runKeyOf('sharded', SLOT, 3, 3) })), JOBS),
    ).toMatchObject({ ok: false, code: 'INCONSISTENT' });
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
    fc.assert(fc.property(fc.jsonValue(), (value) => checkTotal(JSON.stringify(value) ?? 'null')), { numRuns: 1000 });
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
        if (fixKey && typeof m.job === 'string' && typeof m.slot === 'number' && typeof m.shard === 'number' && Number.isSafeInteger(m.slot) && m.slot >= 0) {
          const def = JOBS.get(m.job);
          if (def && Number.isInteger(m.shard) && m.shard >= 0) m.runKey = runKeyOf(m.job, m.slot, m.shard, def.shards);
        }
        checkTotal(JSON.stringify(m));
      }),
      { numRuns: 1000 },
    );
  });
});
