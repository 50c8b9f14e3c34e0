/**
 * The note a former holder leaves on its own claim's entry in the run's history when writes of
 * its attempt were fenced out (DESIGN §6): a newer token holds the run, so the attempt records no
 * outcome, and without the note nothing in the ledger would say which attempt wrote what was
 * refused. Written only then, off the hot path: one conditional update (two when the entry is
 * already there, as overlap `replace` leaves it).
 *
 * The note never changes the run: it sets only its own claim's entry in `attempts` (never status,
 * owner, lease, token, `lastWrite` or the index keys, on which every holder's and operator's
 * condition rests), and only while a newer token than the attempt's holds the item, so the
 * attempt's own holder can never be disturbed by it, nor a claim's entry other than its own.
 * Its write id, kept in the note, makes a retry after a lost response recognise its own commit.
 */
import type { FencedOutRecord, ReconcileRecord } from '../core/attempt-notes.js';
import { claimsOf } from '../core/fence.js';
import { ATTEMPT_HISTORY_LIMIT } from '../core/limits.js';
import type { AttemptRecord, Run, RunStatus } from '../core/vocabulary.js';
import type { OwnCommitCheck } from './conditional.js';
import { REPLACED_CODE } from './run-endings.js';
import { RunTable, type Item } from './run-items.js';
import { newWriteId } from './write-id.js';

/** The attempt that was fenced out: its run, claim (token), owner and when it claimed. */
export type FencedOutAttempt = Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken' | 'owner' | 'startedAt'>;

export interface FencedOutNote {
  readonly fencedOut: FencedOutRecord;
  /** The status the claim took the run from. */
  readonly from?: RunStatus;
  /** What its reconcile answered, if it asked. */
  readonly reconcile?: ReconcileRecord;
}

/**
 * noted: on the entry (by this write, or by its own earlier commit); still-held: no newer token
 * holds the run (nothing written); not-kept: the claim is older than the history the run keeps, or
 * the run has no history map or no item any more (nothing written); recorded: the entry holds the
 * attempt's own outcome, so the refusal the worker saw was its own commit, retried after a newer
 * claim moved the run on (nothing written: the entry would say both "recorded" and "fenced out").
 */
export type NoteResult = 'noted' | 'still-held' | 'not-kept' | 'recorded';

function entryOf(item: Item | undefined, key: string): Item | undefined {
  const attempts = item?.attempts;
  if (typeof attempts !== 'object' || attempts === null) return undefined;
  const entry: unknown = (attempts as Item)[key];
  return typeof entry === 'object' && entry !== null ? (entry as Item) : undefined;
}

/** Whether an entry holds an outcome its attempt recorded itself (overlap `replace` writes one for it). */
function ownOutcome(entry: Item | undefined): boolean {
  return entry?.outcome !== undefined && entry.code !== REPLACED_CODE;
}

function noteIdOf(entry: Item | undefined): unknown {
  const fenced = entry?.fencedOut;
  return typeof fenced === 'object' && fenced !== null ? (fenced as Item).writeId : undefined;
}

export class FencedOutNotes extends RunTable {
  async note(attempt: FencedOutAttempt, note: FencedOutNote, now: number, writeId: string = newWriteId()): Promise<NoteResult> {
    const claim = claimsOf(attempt.fencingToken, attempt.slot);
    const key = `c${claim}`;
    const fencedOut: FencedOutRecord = { ...note.fencedOut, writeId };
    const ours: OwnCommitCheck = (current) => noteIdOf(entryOf(current, key)) === writeId;
    const newerHolds = 'fencingToken > :mine';
    // A claim this many behind the newest is past the history the run keeps (complete drops it).
    const stillKept = 'fencingToken < :beyond';
    const values = { ':mine': attempt.fencingToken, ':beyond': attempt.fencingToken + ATTEMPT_HISTORY_LIMIT };
    const entry: AttemptRecord = {
      claim,
      token: attempt.fencingToken,
      owner: attempt.owner ?? '?',
      ...(note.from ? { from: note.from } : {}),
      claimedAt: attempt.startedAt ?? now,
      ...(note.reconcile ? { reconcile: note.reconcile } : {}),
      fencedOut,
    };
    const first = await this.update(
      attempt,
      'SET attempts.#entry = :entry',
      `${newerHolds} AND ${stillKept} AND attribute_exists(attempts) AND attribute_not_exists(attempts.#entry)`,
      { ...values, ':entry': entry },
      ours,
    );
    if (first.kind !== 'conditionFailed') return 'noted';
    const current = first.current;
    if (current === undefined || typeof current.fencingToken !== 'number') return 'not-kept';
    if (current.fencingToken <= attempt.fencingToken) return 'still-held';
    if (current.fencingToken >= attempt.fencingToken + ATTEMPT_HISTORY_LIMIT) return 'not-kept';
    const existing = entryOf(current, key);
    if (existing === undefined) return 'not-kept';
    if (existing.fencedOut !== undefined) return 'noted';
    if (ownOutcome(existing)) return 'recorded';
    // The entry is there already (overlap `replace` wrote it as it advanced the fence): the note
    // joins it, with the reconcile's answer unless the entry has one.
    const reconcile = note.reconcile && existing.reconcile === undefined ? ', attempts.#entry.reconcile = :reconcile' : '';
    const second = await this.update(
      attempt,
      `SET attempts.#entry.fencedOut = :fenced${reconcile}`,
      `${newerHolds} AND ${stillKept} AND attribute_exists(attempts.#entry) AND attribute_not_exists(attempts.#entry.fencedOut) AND (attribute_not_exists(attempts.#entry.outcome) OR attempts.#entry.code = :replaced)`,
      { ...values, ':fenced': fencedOut, ':replaced': REPLACED_CODE, ...(reconcile ? { ':reconcile': note.reconcile } : {}) },
      ours,
    );
    if (second.kind !== 'conditionFailed') return 'noted';
    const after = entryOf(second.current, key);
    if (after?.fencedOut !== undefined) return 'noted';
    if (ownOutcome(after)) return 'recorded';
    const token = second.current?.fencingToken;
    return typeof token === 'number' && token > attempt.fencingToken ? 'not-kept' : 'still-held';
  }

  private update(attempt: FencedOutAttempt, expression: string, condition: string, values: Item, ownCommit: OwnCommitCheck) {
    return this.updateRun(
      attempt,
      {
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#entry': `c${claimsOf(attempt.fencingToken, attempt.slot)}` },
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      ownCommit,
    );
  }
}
