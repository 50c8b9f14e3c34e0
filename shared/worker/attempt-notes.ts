/**
 * What one attempt notes as it goes, for its entry in the run's history (core/attempt-notes.ts):
 * what the handler's reconcile answered, and which of its writes were fenced out. Both ride on
 * the outcome's own write; an attempt that records no outcome because a newer token holds the run
 * leaves them as a note on its own claim's entry instead (store/fenced-out-notes.ts), one
 * conditional write made only then.
 */
import {
  FencedWrite,
  reconcileRecord,
  refusedByNewerToken,
  withFencedOut,
  type FencedOutRecord,
  type ReconcileRecord,
} from '../core/attempt-notes.js';
import type { Run, RunStatus } from '../core/vocabulary.js';
import type { RunLogger } from '../handler-api.js';
import type { WorkerDeps } from './deps.js';

export class AttemptNotes {
  private reconciledAs: ReconcileRecord | undefined;
  private refused: FencedOutRecord | undefined;

  constructor(
    private readonly deps: Pick<WorkerDeps, 'clock'>,
    /** The attempt's fencing token. */
    readonly token: number,
  ) {}

  /** What reconcile answered (`outcome` as the handler API spells it), or why it gave none. */
  reconciled(answer: Parameters<typeof reconcileRecord>[0]): void {
    this.reconciledAs = reconcileRecord(answer, this.deps.clock());
  }

  /** A write of the attempt refused by the newer token `by` (an effect: on item `resource`). */
  fencedOut(write: FencedWrite, by: number, resource?: string): void {
    this.refused = withFencedOut(this.refused, { write, at: this.deps.clock(), by, ...(resource ? { resource } : {}) });
  }

  /** A write of the run item refused: noted when a newer token than the attempt's held the run (`current`). */
  runWriteRefused(
    write: typeof FencedWrite.HEARTBEAT | typeof FencedWrite.CHECKPOINT | typeof FencedWrite.OUTCOME,
    current: Run | undefined,
  ): void {
    if (refusedByNewerToken(this.token, current)) this.fencedOut(write, current.fencingToken);
  }

  /** The facts the outcome's own write records with the attempt. */
  facts(): { reconcile?: ReconcileRecord; fencedOut?: FencedOutRecord } {
    return { ...(this.reconciledAs ? { reconcile: this.reconciledAs } : {}), ...(this.refused ? { fencedOut: this.refused } : {}) };
  }

  /**
   * The attempt ended without recording its outcome: if writes of it were fenced out, the note
   * on its own claim's entry (written only while a newer token holds the run). Never throws: a
   * note that could not be written is logged, and changes nothing of how the attempt ends.
   */
  async leave(deps: WorkerDeps, run: Run, claimedFrom: RunStatus, logger: RunLogger): Promise<void> {
    if (this.refused === undefined) return;
    try {
      const result = await deps.ledger.noteFencedOut(
        run,
        { fencedOut: this.refused, from: claimedFrom, ...(this.reconciledAs ? { reconcile: this.reconciledAs } : {}) },
        deps.clock(),
      );
      logger.info('fenced-out writes of this attempt', {
        noted: result,
        refused: this.refused.count,
        first: this.refused.writes[0]?.write,
      });
    } catch (error) {
      logger.warn('could not note the fenced-out writes of this attempt', { error: String(error) });
    }
  }
}
