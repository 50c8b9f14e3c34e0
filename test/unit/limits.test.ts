/**
 * Size bounds on what a run item stores (shared/core/limits.ts). The hazard: evidence or an error
 * message that grows without bound makes every later write of the run item dearer and finally
 * makes the outcome write fail after the handler succeeded; a checkpoint too large to store must
 * be refused while the handler can still react. Exactly at a bound is still stored as given.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  boundError,
  boundEvidence,
  boundMessage,
  checkpointProblem,
  jsonChars,
  MAX_CHECKPOINT_CHARS,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_EVIDENCE_CHARS,
  MAX_STORED_DEPTH,
  nestsDeeperThan,
} from '../../shared/core/limits.js';

/** A JSON value whose text is exactly `chars` characters long (a string: two quotes around it). */
const ofChars = (chars: number) => 'x'.repeat(chars - 2);

describe('jsonChars: the size of a value as stored, in JSON characters', () => {
  it('is the length of its JSON text; nothing for undefined (and for what JSON leaves out); unbounded for what cannot be serialized', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonChars(value)).toBe(JSON.stringify(value).length);
      }),
    );
    expect(jsonChars(undefined)).toBe(0);
    expect(jsonChars(() => 1)).toBe(0);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(jsonChars(circular)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('boundEvidence', () => {
  it('keeps evidence up to the bound as given, and replaces larger evidence by a marker with its size and first 512 characters', () => {
    expect(boundEvidence(undefined)).toBeUndefined();
    const atBound = ofChars(MAX_EVIDENCE_CHARS);
    expect(boundEvidence(atBound)).toBe(atBound);
    const over = ofChars(MAX_EVIDENCE_CHARS + 1);
    expect(boundEvidence(over)).toEqual({ truncated: true, chars: MAX_EVIDENCE_CHARS + 1, head: JSON.stringify(over).slice(0, 512) });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(boundEvidence(circular)).toEqual({ truncated: true, chars: -1, head: '(not serializable)' });
  });
});

/** A value nesting `levels` lists, e.g. 2: [['x']]. */
const nested = (levels: number): unknown => Array.from({ length: levels }).reduce<unknown>((inner) => [inner], 'x');

describe('nesting depth: DynamoDB refuses an item nesting more than 32 levels', () => {
  it('nestsDeeperThan counts lists and objects, not scalars', () => {
    expect(nestsDeeperThan('x', 0)).toBe(false);
    expect(nestsDeeperThan([], 0)).toBe(true);
    expect(nestsDeeperThan(nested(3), 3)).toBe(false);
    expect(nestsDeeperThan(nested(4), 3)).toBe(true);
    expect(nestsDeeperThan({ a: { b: [1] } }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: { b: [[1]] } }, 3)).toBe(true);
  });

  it('evidence nesting 29 levels (61 JSON characters) is stored as a marker with its text, so the outcome write cannot be refused for its depth', () => {
    expect(boundEvidence(nested(MAX_STORED_DEPTH))).toEqual(nested(MAX_STORED_DEPTH));
    const deep = nested(29);
    expect(boundEvidence(deep)).toEqual({ truncated: true, chars: JSON.stringify(deep).length, head: JSON.stringify(deep) });
  });

  it('a checkpoint nesting more than the bound is refused to the handler, naming the bound', () => {
    expect(checkpointProblem(nested(MAX_STORED_DEPTH))).toBeUndefined();
    expect(checkpointProblem(nested(MAX_STORED_DEPTH + 1))).toMatch(/nests lists and objects more than 16 levels deep/);
  });
});

describe('boundMessage and boundError', () => {
  it('a message up to the bound is kept; a longer one is cut to exactly the bound, saying how long it was', () => {
    fc.assert(
      fc.property(fc.integer({ min: 60, max: 2_000 }), fc.integer({ min: 0, max: 3_000 }), (max, length) => {
        const message = 'm'.repeat(length);
        const bounded = boundMessage(message, max);
        if (length <= max) expect(bounded).toBe(message);
        else {
          expect(bounded).toHaveLength(max);
          expect(bounded.startsWith('m')).toBe(true);
          expect(bounded.endsWith(`(truncated: ${length} characters)`)).toBe(true);
        }
      }),
    );
    // Exactly at the bound (two independent draws rarely meet it): kept whole, not cut.
    for (const max of [60, 61, 500]) expect(boundMessage('m'.repeat(max), max)).toBe('m'.repeat(max));
    expect(boundMessage('m'.repeat(MAX_ERROR_MESSAGE_CHARS))).toBe('m'.repeat(MAX_ERROR_MESSAGE_CHARS));
    expect(boundMessage('m'.repeat(MAX_ERROR_MESSAGE_CHARS + 1))).toHaveLength(MAX_ERROR_MESSAGE_CHARS);
  });

  it('an error keeps at most 64 characters of its code and a bounded message', () => {
    const error = boundError({ code: 'C'.repeat(100), message: 'm'.repeat(MAX_ERROR_MESSAGE_CHARS + 50) });
    expect(error.code).toBe('C'.repeat(64));
    expect(error.message).toHaveLength(MAX_ERROR_MESSAGE_CHARS);
    expect(boundError({ code: 'SHORT', message: 'fine' })).toEqual({ code: 'SHORT', message: 'fine' });
  });
});

describe('checkpointProblem', () => {
  it('accepts a checkpoint up to the bound; refuses a larger one, naming its size and the bound, and one that is not JSON', () => {
    expect(checkpointProblem(undefined)).toBeUndefined();
    expect(checkpointProblem(ofChars(MAX_CHECKPOINT_CHARS))).toBeUndefined();
    expect(checkpointProblem(ofChars(MAX_CHECKPOINT_CHARS + 1))).toBe(
      `the checkpoint is ${MAX_CHECKPOINT_CHARS + 1} JSON characters; at most ${MAX_CHECKPOINT_CHARS} are stored (keep a cursor, not the data)`,
    );
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(checkpointProblem(circular)).toBe('the checkpoint is not JSON-serializable');
  });
});
