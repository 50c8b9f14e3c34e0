/**
 * What an attempt's entry in the run's history says beyond its outcome (DESIGN §6, §8), pure:
 * the answer the handler's `reconcile` gave when the previous result was unknown, and the writes
 * of the attempt that were fenced out (refused because a newer token held the run or the item).
 * Both are bounded: the entry rides on the run item, whose every write costs a unit per KB.
 */
import { boundMessage, jsonChars, MAX_HISTORY_MESSAGE_CHARS, MAX_STORED_DEPTH, nestsDeeperThan } from './limits.js';

/** What `reconcile` answered (the handler API's ReconcileOutcome), or that it gave no answer. */
export const ReconcileAnswer = {
  ALREADY_DONE: 'already-done',
  NOT_DONE: 'not-done',
  STILL_UNKNOWN: 'still-unknown',
  /** It threw, or the attempt ended (timeout, lease) before it answered. */
  NO_ANSWER: 'no-answer',
} as const;
export type ReconcileAnswer = (typeof ReconcileAnswer)[keyof typeof ReconcileAnswer];

/** The reconcile of one attempt as its entry keeps it. */
export interface ReconcileRecord {
  readonly answer: ReconcileAnswer;
  /** When it answered (or gave up), UTC ms. */
  readonly at: number;
  /** ALREADY_DONE's evidence, when it fits MAX_NOTE_EVIDENCE_CHARS and MAX_STORED_DEPTH; else `evidenceChars` says how large it was. */
  readonly evidence?: unknown;
  readonly evidenceChars?: number;
  /** STILL_UNKNOWN's reason, or why there was no answer. */
  readonly reason?: string;
}

/** Evidence kept on an attempt's entry at most (JSON characters); the run's own `evidence` keeps more. */
export const MAX_NOTE_EVIDENCE_CHARS = 240;

/** The record of what reconcile answered (`outcome` as the handler API spells it) or why it gave none. */
export function reconcileRecord(
  answer: { readonly outcome: string; readonly evidence?: unknown; readonly reason?: string } | { readonly failed: string },
  at: number,
): ReconcileRecord {
  if ('failed' in answer) return { answer: ReconcileAnswer.NO_ANSWER, at, reason: boundMessage(answer.failed, MAX_HISTORY_MESSAGE_CHARS) };
  const known = Object.values(ReconcileAnswer).find((a) => a === answer.outcome && a !== ReconcileAnswer.NO_ANSWER);
  if (known === undefined)
    return {
      answer: ReconcileAnswer.NO_ANSWER,
      at,
      reason: boundMessage(`unrecognised answer "${answer.outcome}"`, MAX_HISTORY_MESSAGE_CHARS),
    };
  const reason = answer.reason === undefined ? {} : { reason: boundMessage(answer.reason, MAX_HISTORY_MESSAGE_CHARS) };
  if (known !== ReconcileAnswer.ALREADY_DONE || answer.evidence === undefined) return { answer: known, at, ...reason };
  const chars = jsonChars(answer.evidence);
  return chars <= MAX_NOTE_EVIDENCE_CHARS && !nestsDeeperThan(answer.evidence, MAX_STORED_DEPTH)
    ? { answer: known, at, evidence: answer.evidence }
    : { answer: known, at, evidenceChars: Number.isFinite(chars) ? chars : -1 };
}

/** Which write of an attempt was refused. */
export const FencedWrite = {
  HEARTBEAT: 'heartbeat',
  CHECKPOINT: 'checkpoint',
  OUTCOME: 'outcome',
  /** A handler's `ctx.fenced` write (an outbox row included). */
  EFFECT: 'effect',
} as const;
export type FencedWrite = (typeof FencedWrite)[keyof typeof FencedWrite];

/** One refused write. */
export interface FencedOutWrite {
  readonly write: FencedWrite;
  readonly at: number;
  /** The token that held the run or the item. */
  readonly by: number;
  /** An effect's item, `table/pk/sk` (bounded). */
  readonly resource?: string;
}

/** An attempt's fenced-out writes: the first few, and how many there were. */
export interface FencedOutRecord {
  readonly writes: readonly FencedOutWrite[];
  readonly count: number;
  /** The write id of the note a former holder wrote (its retry recognises its own commit). */
  readonly writeId?: string;
}

/** Refused writes an entry lists at most (the count goes on). */
export const MAX_FENCED_WRITES_KEPT = 5;
const MAX_RESOURCE_CHARS = 160;

/** The record with one more refused write. */
export function withFencedOut(record: FencedOutRecord | undefined, write: FencedOutWrite): FencedOutRecord {
  const bounded = write.resource === undefined ? write : { ...write, resource: boundMessage(write.resource, MAX_RESOURCE_CHARS) };
  const writes = record?.writes ?? [];
  return { writes: writes.length < MAX_FENCED_WRITES_KEPT ? [...writes, bounded] : writes, count: (record?.count ?? 0) + 1 };
}

/**
 * Whether a refusal of a write of the run item came from a newer token: the run is held (or was
 * ended) by a later claim or an operator's takeover. A refusal on the same token (the sweeper
 * ended a spent run, the item is gone) is no fenced-out write.
 */
export function refusedByNewerToken(
  mine: number,
  current: { readonly fencingToken: number } | undefined,
): current is { fencingToken: number } {
  return current !== undefined && current.fencingToken > mine;
}
