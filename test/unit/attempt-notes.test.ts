/**
 * The pure rules of an attempt's notes (shared/core/attempt-notes.ts): what reconcile answered is
 * kept as its own answer, bounded, never a guess; only a refusal by a newer token is a fenced-out
 * write; an attempt refused again and again keeps a bounded list and the true count. And how the
 * attempt history (tools/ops/attempts.ts) and the console's timeline show them.
 */
import { describe, expect, it } from 'vitest';
import {
  FencedWrite,
  MAX_FENCED_WRITES_KEPT,
  MAX_NOTE_EVIDENCE_CHARS,
  ReconcileAnswer,
  reconcileRecord,
  refusedByNewerToken,
  withFencedOut,
  type FencedOutRecord,
} from '../../shared/core/attempt-notes.js';
import { initialFence } from '../../shared/core/fence.js';
import { MAX_HISTORY_MESSAGE_CHARS } from '../../shared/core/limits.js';
import { ReconcileOutcome } from '../../shared/handler-api.js';
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { timeline, timelineRuns } from '../../tools/console/charts.js';
import { fencedItems, fencedText, reconcileText } from '../../tools/console/pages/run.js';
import { AttemptEnd, attemptHistory, fencedOutText, reconcileAnswerText } from '../../tools/ops/attempts.js';

const AT = Date.UTC(2026, 5, 1, 12, 0, 5);
const SLOT = Date.UTC(2026, 5, 1, 12, 0);
const MINE = initialFence(SLOT) + 1;

describe("the reconcile's answer", () => {
  it('the answers the handler API spells are kept as they are: a recorded answer is never inferred from the outcome', () => {
    expect(Object.values(ReconcileOutcome).every((o) => Object.values(ReconcileAnswer).includes(o))).toBe(true);
    expect(reconcileRecord({ outcome: ReconcileOutcome.NOT_DONE }, AT)).toEqual({ answer: 'not-done', at: AT });
    expect(reconcileRecord({ outcome: ReconcileOutcome.STILL_UNKNOWN, reason: 'bank API down' }, AT)).toEqual({
      answer: 'still-unknown',
      at: AT,
      reason: 'bank API down',
    });
    expect(reconcileRecord({ outcome: ReconcileOutcome.ALREADY_DONE, evidence: { payment: 'p-1' } }, AT)).toEqual({
      answer: 'already-done',
      at: AT,
      evidence: { payment: 'p-1' },
    });
    // Evidence nesting deeper than the bound is kept on the run, not on the entry three levels down.
    const deep = Array.from({ length: 29 }).reduce<unknown>((inner) => [inner], 'x');
    expect(reconcileRecord({ outcome: ReconcileOutcome.ALREADY_DONE, evidence: deep }, AT)).toEqual({
      answer: 'already-done',
      at: AT,
      evidenceChars: JSON.stringify(deep).length,
    });
  });

  it('no answer (it threw, or the attempt ended first) and an answer the API does not know are both "no-answer", with why', () => {
    expect(reconcileRecord({ failed: 'ThrottlingException' }, AT)).toEqual({ answer: 'no-answer', at: AT, reason: 'ThrottlingException' });
    expect(reconcileRecord({ outcome: 'maybe' }, AT)).toEqual({ answer: 'no-answer', at: AT, reason: 'unrecognised answer "maybe"' });
  });

  it('large evidence and long reasons are bounded: the entry rides on every later write of the run item', () => {
    const big = { rows: 'x'.repeat(MAX_NOTE_EVIDENCE_CHARS) };
    const done = reconcileRecord({ outcome: ReconcileOutcome.ALREADY_DONE, evidence: big }, AT);
    expect(done).toEqual({ answer: 'already-done', at: AT, evidenceChars: JSON.stringify(big).length });
    const unknown = reconcileRecord({ outcome: ReconcileOutcome.STILL_UNKNOWN, reason: 'r'.repeat(5_000) }, AT);
    expect(unknown.reason!.length).toBeLessThanOrEqual(MAX_HISTORY_MESSAGE_CHARS);
    expect(reconcileRecord({ failed: 'e'.repeat(5_000) }, AT).reason!.length).toBeLessThanOrEqual(MAX_HISTORY_MESSAGE_CHARS);
  });
});

describe('fenced-out writes', () => {
  it('only a refusal by a newer token is a fenced-out write: the same token (the sweeper ended a spent run) or no item is not', () => {
    expect(refusedByNewerToken(MINE, { fencingToken: MINE + 1 })).toBe(true);
    expect(refusedByNewerToken(MINE, { fencingToken: MINE })).toBe(false);
    expect(refusedByNewerToken(MINE, { fencingToken: MINE - 1 })).toBe(false);
    expect(refusedByNewerToken(MINE, undefined)).toBe(false);
  });

  it('an attempt refused again and again keeps the first few writes and the true count, each resource bounded', () => {
    let record: FencedOutRecord | undefined;
    for (let i = 0; i < MAX_FENCED_WRITES_KEPT + 3; i++)
      record = withFencedOut(record, { write: FencedWrite.EFFECT, at: AT + i, by: MINE + 1, resource: `payments/${'k'.repeat(500)}/${i}` });
    expect(record!.count).toBe(MAX_FENCED_WRITES_KEPT + 3);
    expect(record!.writes.map((w) => w.at)).toEqual(Array.from({ length: MAX_FENCED_WRITES_KEPT }, (_, i) => AT + i));
    expect(Math.max(...record!.writes.map((w) => w.resource!.length))).toBeLessThanOrEqual(160);
    expect(fencedOutText(record)).toMatch(/\(and 3 more\)$/);
  });
});

/** A run taken over once: claim 1 left a fenced-out note (no outcome), claim 2 reconciled and succeeded. */
function takenOverRun(): Run {
  const fencedOut = { writes: [{ write: FencedWrite.HEARTBEAT, at: SLOT + 40_000, by: MINE + 1 }], count: 1, writeId: 'w-1' };
  return {
    job: 'pay',
    slot: SLOT,
    shard: 0,
    shards: 1,
    runKey: 'pay@2026-06-01T12:00:00.000Z',
    status: RunStatus.SUCCEEDED,
    fencingToken: MINE + 1,
    attempt: 2,
    createdAt: SLOT - 1_000,
    attempts: [
      { claim: 1, token: MINE, owner: 'frozen', from: RunStatus.READY, claimedAt: SLOT + 100, fencedOut },
      {
        claim: 2,
        token: MINE + 1,
        owner: 'successor',
        from: RunStatus.RUNNING,
        claimedAt: SLOT + 32_000,
        endedAt: SLOT + 33_000,
        outcome: RunStatus.SUCCEEDED,
        reconcile: { answer: ReconcileAnswer.ALREADY_DONE, at: SLOT + 32_500, evidence: { payment: 'p-1' } },
      },
    ],
  };
}

describe('how the history and the console show them', () => {
  it("a claim taken over whose worker came back leaves a row with its owner, token and claim time, ending at its first refused write; the note's write id is not history", () => {
    const { rows } = attemptHistory(takenOverRun());
    expect(rows[0]).toEqual({
      claim: 1,
      end: AttemptEnd.TAKEN_OVER,
      token: MINE,
      owner: 'frozen',
      from: RunStatus.READY,
      claimedAt: SLOT + 100,
      endedAt: SLOT + 40_000,
      durationMs: 39_900,
      fencedOut: { writes: [{ write: 'heartbeat', at: SLOT + 40_000, by: MINE + 1 }], count: 1 },
    });
    expect(rows[1]).toMatchObject({ end: AttemptEnd.RECORDED, outcome: RunStatus.SUCCEEDED, reconcile: { answer: 'already-done' } });
  });

  it("the Run page shows the reconcile's recorded answer and when, and the fenced-out writes with the token that refused them", () => {
    const { rows } = attemptHistory(takenOverRun());
    expect(reconcileText(rows[1]!, true)).toBe('already-done (evidence {"payment":"p-1"}) · 2026-06-01T12:00:32.500Z');
    expect(reconcileAnswerText(rows[1]!.reconcile)).toBe('already-done (evidence {"payment":"p-1"})');
    expect(fencedText(rows[0]!)).toBe(`✕ heartbeat by token ${MINE + 1} · first at 2026-06-01T12:00:40Z`);
    expect(fencedText(rows[1]!)).toBe('-');
    expect(fencedItems(rows[0]!)).toBe(`heartbeat by token ${MINE + 1}`);
    // An entry from before answers were recorded says it has none, never a guess from the outcome.
    const { reconcile: _answer, ...older } = rows[1]!;
    expect(reconcileText(older, true)).toBe(
      'no answer recorded (the attempt was refused before it ran, or recorded before answers were kept); it ended SUCCEEDED',
    );
  });

  it('the timeline draws the fenced-out claim as a bar from its claim to its first refused write, marked "fenced ✕", and the takeover after it', () => {
    const svg = timeline(timelineRuns([takenOverRun()]), SLOT + 60_000).text;
    expect(svg).toMatch(/<rect [^>]*class="bar o-taken-over fenced" [^>]*data-claim="1" data-takeover="false" data-fenced="true">/);
    expect(svg).toMatch(/<rect [^>]*class="bar o-succeeded takeover" [^>]*data-claim="2" data-takeover="true" data-fenced="false">/);
    expect(svg.match(/>fenced ✕</g)).toHaveLength(1);
    expect(svg.match(/>takeover ▶</g)).toHaveLength(1);
    expect(svg).toContain(`1 write(s) fenced out: heartbeat by token ${MINE + 1}`);
  });
});
