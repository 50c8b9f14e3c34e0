/**
 * The fault drills' own checks, on hand-made histories: a check that raises a false alarm on a
 * loaded machine fails CI for nothing, and one that is too loose hides the defect it is for.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEvent } from '../../shared/core/history.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import type { DrillNote } from '../../tools/chaos/handlers.js';
import { unreconciledTakeovers } from '../../tools/chaos/drills/worker-killed.js';

const RUN = 'b2-9mr-j@2026-12-01T23:00:00.000Z';
const VICTIM = 'b2-9mr-victim';
const SUCCESSOR = 'b2-9mr-successor0';

const claimed = (owner: string, token: number, from: RunStatus, at: number): HistoryEvent => ({
  type: 'claimed',
  at,
  runKey: RUN,
  owner,
  token,
  attempt: token,
  from,
  leaseUntil: at + 1_200,
});
const hang = (token: number): DrillNote => ({ note: 'hang', runKey: RUN, token, at: 100 });
const reconcile = (token: number): DrillNote => ({ note: 'reconcile', runKey: RUN, token, at: 5_000, outcome: 'already-done' });

describe('drill (b) reconcile-on-takeover', () => {
  it('a successor that took a hung run over without a reconcile is caught', () => {
    const events = [claimed(VICTIM, 1, RunStatus.READY, 0), claimed(SUCCESSOR, 2, RunStatus.RUNNING, 3_000)];
    expect(unreconciledTakeovers([hang(1)], events, [], VICTIM)).toEqual([RUN]);
  });

  it('a reconcile of an attempt older than the hung one does not count', () => {
    const events = [claimed(VICTIM, 2, RunStatus.RUNNING, 0), claimed(SUCCESSOR, 3, RunStatus.RUNNING, 3_000)];
    expect(unreconciledTakeovers([hang(2)], events, [reconcile(2)], VICTIM)).toEqual([RUN]);
  });

  it("a successor's takeover that reconciled first passes", () => {
    const events = [claimed(VICTIM, 1, RunStatus.READY, 0), claimed(SUCCESSOR, 2, RunStatus.RUNNING, 3_000)];
    expect(unreconciledTakeovers([hang(1)], events, [reconcile(2)], VICTIM)).toEqual([]);
  });

  it("the victim's own poller took the hung run over before the kill and reconciled it: no false alarm (CI on 41f20b7)", () => {
    // A loaded machine: the victim's heartbeats came late, its lease ran out, one of its other
    // pollers claimed the run from RUNNING, reconciled (already done) and recorded the success.
    // No successor ever saw the run, so none could reconcile it: the guarantee held.
    const events = [claimed(VICTIM, 1, RunStatus.READY, 0), claimed(VICTIM, 2, RunStatus.RUNNING, 2_000)];
    expect(unreconciledTakeovers([hang(1)], events, [reconcile(2)], VICTIM)).toEqual([]);
  });

  it('the check is per run: a reconcile by any attempt after the hung one counts for it', () => {
    // The victim's poller reconciled under token 2 and was killed before its outcome; the
    // successor's takeover (token 3) finds the charge already reconciled once. The check asks
    // that the run was reconciled after the charge, not which attempt did it.
    const events = [
      claimed(VICTIM, 1, RunStatus.READY, 0),
      claimed(VICTIM, 2, RunStatus.RUNNING, 2_000),
      claimed(SUCCESSOR, 3, RunStatus.RUNNING, 5_000),
    ];
    expect(unreconciledTakeovers([hang(1)], events, [reconcile(2)], VICTIM)).toEqual([]);
  });
});
