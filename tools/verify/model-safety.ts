/**
 * Safety checks beyond DESIGN §9's five, for histories that carry what a model-based harness
 * knows (handler-finished, reconciled, ops and actor-disturbed events, item logs with write ids).
 * Pure: the events arrive already ordered by checker.ts.
 *
 *  no-rerun-after-success   a handler that returned success, under a worker that was not stopped by
 *                           the environment and recorded nothing, is not run again (without a
 *                           reconcile first): the worker must record the success or retry recording
 *                           it, not give the run up to a takeover;
 *  reconcile-before-rerun   for a job with a reconcile: once an attempt may have had its effect
 *                           (succeeded unrecorded, result unknown, aborted, never finished), the next
 *                           handler run of that run is preceded by a reconcile under its own token
 *                           (a reconcile that found it not done settles the attempts before its own);
 *  no-late-fenced-write     no fenced write of an attempt lands after the worker recorded that
 *                           attempt's end (its outcome, accepted or refused);
 *  no-double-apply          an item applies each logical write (write id) at most once: a retried
 *                           increment whose first try committed is not counted twice;
 *  own-write-recognised     a worker reads its own committed write as its own: an outcome refused
 *                           while nobody else touched the run, or a takeover of a claim nobody
 *                           reported (and no actor holding the run was stopped), means a retried
 *                           call whose first try committed was read as someone else's lease;
 *  fenced-out-superseded    a run whose write was fenced out by a newer slot's write settles
 *                           SUPERSEDED (DESIGN §11.9), not DEAD after a loop of takeovers, nor open;
 *  superseded-by-due        a run is only superseded by a newer run that was already due;
 *  no-unexpected-run        no run exists that the model says nobody could have created (a paused
 *                           job's, a removed job's, a slot from before the job existed).
 */
import type { CheckViolation, FinalState, ModelExpectations } from './check-types.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';

type Event<T extends HistoryEvent['type']> = Extract<HistoryEvent, { type: T }>;

const iso = (ms: number | undefined) => (ms !== undefined && Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

import { Invariant as I, type Invariant as InvariantType } from './invariant-names.js';

function byRun(events: readonly HistoryEvent[]): Map<string, HistoryEvent[]> {
  const out = new Map<string, HistoryEvent[]>();
  for (const e of events) {
    if (e.type === 'actor-disturbed') continue;
    const list = out.get(e.runKey);
    if (list) list.push(e);
    else out.set(e.runKey, [e]);
  }
  return out;
}

/** Owners the environment stopped while they held a run's message, by run key. */
function disturbedOwners(events: readonly HistoryEvent[]): Map<string, { owner: string; at: number }[]> {
  const out = new Map<string, { owner: string; at: number }[]>();
  for (const e of events) {
    if (e.type !== 'actor-disturbed') continue;
    out.set(e.runKey, [...(out.get(e.runKey) ?? []), { owner: e.owner, at: e.at }]);
  }
  return out;
}

export function checkModelSafety(events: readonly HistoryEvent[], final: FinalState, model: ModelExpectations): CheckViolation[] {
  const violations: CheckViolation[] = [];
  const flag = (invariant: InvariantType, runKey: string, detail: string) => violations.push({ invariant, runKey, detail });
  const runs = byRun(events);
  const disturbed = disturbedOwners(events);
  const everDisturbed = new Set<string>();
  for (const e of events) if (e.type === 'actor-disturbed') everDisturbed.add(e.owner);
  const reconciling = new Set(model.reconciling);
  const finalRuns = new Map(final.runs.map((r) => [r.runKey, r]));

  for (const [runKey, list] of runs) {
    const job = finalRuns.get(runKey)?.job ?? runKey.split('@')[0]!;
    // ---------------------------------------------------------------- reruns
    let mayHaveHadEffect: { token: number; why: string } | undefined;
    const finished = new Map<number, Event<'handler-finished'>>();
    const reconciledTokens = new Set<number>();
    const acceptedTokens = new Set<number>();
    const refusedAt = new Map<number, number>();
    const leaseUntil = new Map<number, number>();
    const claimedAt: { token: number; at: number }[] = [];
    const startedTokens: { token: number; owner: string; at: number }[] = [];
    // A reconcile under token t that found the effect not done settles every attempt before t:
    // their writes can no longer land (no-late-fenced-write checks that), so only what attempt t
    // and later ones do may have had an effect.
    let settledBefore = Number.NEGATIVE_INFINITY;
    // A worker's success counts as recorded when its outcome was accepted, or when its refusal
    // was the environment's doing: another claim took the run first, an operator acted on the run
    // while this attempt held it, or the lease had run out. Giving a success up with lease left
    // and nobody else on the run re-runs a finished handler. An operator's action from before the
    // attempt's claim (the retry that revived the run, say) excuses nothing: the attempt's own
    // claim already superseded it.
    const recordedOrLost = (token: number) => {
      if (acceptedTokens.has(token)) return true;
      const refused = refusedAt.get(token);
      if (refused === undefined) return false;
      const claimed = claimedAt.find((c) => c.token === token)?.at ?? Number.NEGATIVE_INFINITY;
      const otherClaim = claimedAt.some((c) => c.token > token && c.at <= refused);
      const opsWhileHeld = list.some((o) => o.type === 'ops' && o.at <= refused && o.at >= claimed - model.clockToleranceMs);
      return otherClaim || opsWhileHeld || refused >= (leaseUntil.get(token) ?? Number.NEGATIVE_INFINITY) - model.clockToleranceMs;
    };
    for (const e of list) {
      if (e.type === 'claimed' || (e.type === 'heartbeat' && e.ok)) {
        leaseUntil.set(e.token, Math.max(leaseUntil.get(e.token) ?? Number.NEGATIVE_INFINITY, e.leaseUntil));
        if (e.type === 'claimed') claimedAt.push({ token: e.token, at: e.at });
      }
      if (e.type === 'reconciled') {
        reconciledTokens.add(e.token);
        if (e.outcome === 'not-done') {
          settledBefore = Math.max(settledBefore, e.token);
          if (mayHaveHadEffect && mayHaveHadEffect.token < e.token) mayHaveHadEffect = undefined;
        }
      } else if (e.type === 'outcome') {
        if (e.accepted) acceptedTokens.add(e.token);
        else if (!refusedAt.has(e.token)) refusedAt.set(e.token, e.at);
        if (e.accepted && e.status === RunStatus.SUCCEEDED && mayHaveHadEffect?.token === e.token)
          mayHaveHadEffect = { token: e.token, why: 'succeeded' };
      } else if (e.type === 'handler-finished') {
        if (!finished.has(e.token)) finished.set(e.token, e);
        if (e.result === 'retryable' || e.result === 'permanent' || e.result === 'stopped') {
          if (mayHaveHadEffect?.token === e.token) mayHaveHadEffect = undefined;
        } else if (e.token >= settledBefore && (!mayHaveHadEffect || mayHaveHadEffect.token <= e.token)) {
          // (An attempt a later reconcile settled may report its end after it: a zombie handler.)
          mayHaveHadEffect = {
            token: e.token,
            why: e.result === 'succeeded' ? 'succeeded without a recorded outcome' : `ended ${e.result}`,
          };
        }
      } else if (e.type === 'handler-started') {
        const earlier = startedTokens.filter((s) => s.token < e.token);
        if (reconciling.has(job) && !reconciledTokens.has(e.token)) {
          // An earlier attempt that started and never reported a known-not-done end may have had its effect.
          const unfinished = earlier.find((s) => !finished.has(s.token) && s.token >= settledBefore);
          const why =
            mayHaveHadEffect && mayHaveHadEffect.token < e.token
              ? mayHaveHadEffect
              : unfinished
                ? { token: unfinished.token, why: 'never finished' }
                : undefined;
          if (why) {
            flag(
              I.RECONCILE_BEFORE_RERUN,
              runKey,
              `handler ran again under token ${e.token} (${e.owner}) without a reconcile, after attempt ${why.token} ${why.why}`,
            );
          }
        }
        if (!reconciling.has(job) && !reconciledTokens.has(e.token)) {
          for (const s of earlier) {
            const end = finished.get(s.token);
            if (end?.result !== 'succeeded' || recordedOrLost(s.token)) continue;
            const stopped = (disturbed.get(runKey) ?? []).some((d) => d.owner === s.owner) || everDisturbed.has(s.owner);
            if (stopped) continue;
            flag(
              I.NO_RERUN_AFTER_SUCCESS,
              runKey,
              `handler ran again under token ${e.token} (${e.owner}) although attempt ${s.token} (${s.owner}) had succeeded at ${iso(end.at)} and its worker, never stopped, recorded no outcome (or gave it up with its lease left)`,
            );
            break;
          }
        }
        startedTokens.push({ token: e.token, owner: e.owner, at: e.at });
      }
    }

    // ---------------------------------------------------------------- writes after the attempt ended
    const ended = new Map<number, Event<'outcome'>>();
    for (const e of list) {
      if (e.type === 'outcome' && !ended.has(e.token)) ended.set(e.token, e);
      if (e.type === 'effect' && e.result === 'accepted') {
        const end = ended.get(e.token);
        if (end) {
          flag(
            I.NO_LATE_FENCED_WRITE,
            runKey,
            `write to ${e.resource} with token ${e.token} landed at ${iso(e.at)}, after the attempt's outcome (${end.status}, ${end.accepted ? 'accepted' : 'refused'}) was recorded at ${iso(end.at)}`,
          );
          ended.delete(e.token); // one report per attempt is enough
        }
      }
    }

    // ---------------------------------------------------------------- own writes read as someone else's
    let lastClaim: Event<'claimed'> | undefined;
    let lastClaimEnded = false;
    let touchedSinceClaim = false;
    for (const e of list) {
      if (e.type === 'claimed') {
        if (lastClaim && e.token <= lastClaim.token) continue; // reported late, landed earlier
        if (e.from === RunStatus.RUNNING && (!lastClaim || lastClaimEnded)) {
          const stopped = (disturbed.get(runKey) ?? []).length > 0;
          if (!stopped) {
            flag(
              I.OWN_WRITE_RECOGNISED,
              runKey,
              `${e.owner} took over (token ${e.token}) a RUNNING run whose last claim nobody reported holding${lastClaim ? ` (last reported: token ${lastClaim.token}, ended)` : ''}: a committed claim was not recognised by its own worker`,
            );
          }
        }
        lastClaim = e;
        lastClaimEnded = false;
        touchedSinceClaim = false;
      } else if (e.type === 'ops') {
        touchedSinceClaim = true;
        lastClaimEnded = true;
      } else if (e.type === 'outcome') {
        if (lastClaim && e.token === lastClaim.token) {
          if (!e.accepted && e.status !== RunStatus.RUNNING && !touchedSinceClaim) {
            flag(
              I.OWN_WRITE_RECOGNISED,
              runKey,
              `outcome ${e.status} of ${e.owner} (token ${e.token}) was refused although nobody else touched the run since that claim: its own committed write was read as a lost lease`,
            );
          }
          if (e.accepted && e.status !== RunStatus.RUNNING) lastClaimEnded = true;
        }
      }
    }
  }

  // ---------------------------------------------------------------- increments applied twice
  for (const state of final.business ?? []) {
    const seen = new Map<string, number>();
    for (const effect of state.effects ?? []) {
      if (effect.writeId === undefined) continue;
      const count = (seen.get(effect.writeId) ?? 0) + 1;
      seen.set(effect.writeId, count);
      if (count === 2)
        flag(
          I.NO_DOUBLE_APPLY,
          effect.runKey ?? state.resource,
          `${state.resource} applied write ${effect.writeId} twice (token ${effect.token})`,
        );
    }
  }

  // ---------------------------------------------------------------- fenced out by a newer slot → SUPERSEDED
  const acceptedBy = new Map<string, { token: number; runKey: string }[]>();
  // An operator's retry, redrive or resolve after the refusal starts the run over: its end is theirs.
  const repairedAfter = (runKey: string, at: number) => events.some((o) => o.type === 'ops' && o.runKey === runKey && o.at >= at);
  // Only the attempt that met the fence knows of it: if that attempt recorded no outcome (its
  // worker died before its SUPERSEDED write landed) and a takeover ended the run with its result
  // unknown (its deadline or attempts spent before it could run the handler again), nobody left
  // could tell (the fence lives on the business item) and "result unknown" is the honest end.
  // An attempt that recorded anything after the fence, a retry above all, is still judged.
  const endedUnrecorded = (runKey: string, token: number) =>
    !events.some((o) => o.type === 'outcome' && o.runKey === runKey && o.token === token && o.accepted);
  const takenOverUnknown = (run: Run, token: number) =>
    run.resultUnknown === true && run.fencingToken > token && endedUnrecorded(run.runKey, token);
  for (const e of events) {
    if (e.type !== 'effect') continue;
    if (e.result === 'accepted') acceptedBy.set(e.resource, [...(acceptedBy.get(e.resource) ?? []), { token: e.token, runKey: e.runKey }]);
    if (e.result !== 'fenced-out') continue;
    const run = finalRuns.get(e.runKey);
    if (
      !run ||
      run.status === RunStatus.SUPERSEDED ||
      run.status === RunStatus.SUCCEEDED ||
      run.status === RunStatus.MANUAL ||
      run.status === RunStatus.SKIPPED
    )
      continue;
    if (repairedAfter(run.runKey, e.at) || takenOverUnknown(run, e.token)) continue;
    const newer = (acceptedBy.get(e.resource) ?? []).find(
      (w) => w.token > e.token && (finalRuns.get(w.runKey)?.slot ?? -Infinity) > run.slot,
    );
    if (!newer) continue;
    flag(
      I.FENCED_OUT_SUPERSEDED,
      run.runKey,
      `its write to ${e.resource} (token ${e.token}) was fenced out by ${newer.runKey} (token ${newer.token}), a newer slot, yet the run ended ${run.status}${run.lastError ? ` (${run.lastError.code})` : ''} instead of SUPERSEDED`,
    );
    finalRuns.delete(run.runKey); // once per run
  }

  // ---------------------------------------------------------------- superseded only by a due run
  const all = final.runs;
  for (const run of all) {
    if (run.status !== RunStatus.SUPERSEDED) continue;
    const group = model.itemGroups[run.job] ?? run.job;
    const at = (run.finishedAt ?? Number.POSITIVE_INFINITY) + model.clockToleranceMs;
    // Superseded in its lane (coalesce, replace: lastError SUPERSEDED or REPLACED), only a newer
    // run of the same job and shard can be the reason; fenced out by a newer slot's write, the
    // writer may be any job of the item group.
    const inLane = run.lastError?.code === RunStatus.SUPERSEDED || run.lastError?.code === 'REPLACED';
    const couldSupersede = (other: (typeof all)[number]) =>
      inLane
        ? other.job === run.job && other.shard === run.shard
        : (model.itemGroups[other.job] ?? other.job) === group && (other.job !== run.job || other.shard === run.shard);
    const due = all.some(
      (other) =>
        couldSupersede(other) &&
        other.runKey !== run.runKey &&
        other.slot > run.slot &&
        other.slot - (model.startLeadMs?.[other.job] ?? 0) <= at,
    );
    if (!due) {
      const next = all.filter((o) => o.job === run.job && o.shard === run.shard && o.slot > run.slot).sort((a, b) => a.slot - b.slot)[0];
      flag(
        I.SUPERSEDED_BY_DUE,
        run.runKey,
        `SUPERSEDED at ${iso(run.finishedAt)} although no newer run was due yet${next ? ` (the next one, ${next.runKey}, was due only at ${iso(next.slot - (model.startLeadMs?.[next.job] ?? 0))})` : ''}`,
      );
    }
  }

  // ---------------------------------------------------------------- runs where none may be
  const existing = new Map(all.map((r) => [r.runKey, r]));
  for (const unexpected of model.unexpected ?? []) {
    const run = existing.get(unexpected.runKey);
    if (run) flag(I.NO_UNEXPECTED_RUN, run.runKey, `created at ${iso(run.createdAt)} (${run.status}) although ${unexpected.why}`);
  }
  return violations;
}
