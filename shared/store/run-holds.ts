/**
 * The lease holder's writes on a run item (DESIGN §6): the claim (one conditional UpdateItem that
 * takes the lease and advances the fence), heartbeats, checkpoints, the outcome, and handing a
 * claim back. Each is conditional on the lease (owner, token, RUNNING) and stamped with a write
 * id where a retry after a lost response must recognise its own commit (DESIGN §12).
 */
import { claimsOf, initialFence, MAX_CLAIMS_PER_SLOT } from '../core/fence.js';
import { explainClaimRefusal, type ClaimResult } from '../core/lease.js';
import { ATTEMPT_HISTORY_LIMIT, boundMessage, MAX_HISTORY_MESSAGE_CHARS } from '../core/limits.js';
import { isWaiting, RunStatus, type AttemptRecord, type Run, type RunId } from '../core/vocabulary.js';
import { deadKeys, RunTable, runFromItem, watchKeys, type AttemptFacts, type LeaseCheck, type Outcome } from './run-items.js';
import { newWriteId } from './write-id.js';

export class RunHolds extends RunTable {
  /**
   * Claims the run in ONE conditional UpdateItem: sets owner, leaseUntil, status RUNNING,
   * attempt + 1 and fencingToken + 1, returning the new item. A RUNNING run whose lease expired
   * (beyond the clock allowance) is claimable: that is a takeover. An exclusive lane's marker is
   * taken before this, by `lanes.acquire`.
   *
   * A claim whose response was lost after it committed is retried by the SDK; the retry fails
   * its condition against our own claim, and the write id returned with the failure says so: it
   * is reported claimed, not as someone else's lease.
   */
  async claim(id: RunId, owner: string, now: number, leaseMs: number, skewMs: number): Promise<ClaimResult> {
    const writeId = newWriteId();
    const claimableStatus = '#status IN (:ready, :retry, :unknown)';
    const backoffElapsed = '(attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now)';
    const leaseExpired = '(#status = :running AND leaseUntil < :expiredBefore)';
    const fenceRangeLeft = 'fencingToken < :maxToken';
    const result = await this.updateRun(
      id,
      {
        // Operands read the item as it was before this update, so claimedFrom records the
        // status the claim started from (RUNNING means takeover, UNKNOWN means reconcile first).
        UpdateExpression:
          'SET claimedFrom = #status, #status = :running, #owner = :owner, leaseUntil = :leaseUntil, ' +
          'startedAt = :now, fencingToken = fencingToken + :one, attempt = attempt + :one, lastWrite = :write ' +
          'REMOVE nextAttemptAt, redispatches',
        ConditionExpression: `attribute_exists(pk) AND ((${claimableStatus} AND ${backoffElapsed}) OR ${leaseExpired}) AND ${fenceRangeLeft}`,
        ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
        ExpressionAttributeValues: {
          ':ready': RunStatus.READY,
          ':retry': RunStatus.RETRY,
          ':unknown': RunStatus.UNKNOWN,
          ':running': RunStatus.RUNNING,
          ':owner': owner,
          ':now': now,
          ':leaseUntil': now + leaseMs,
          ':expiredBefore': now - skewMs,
          ':one': 1,
          ':write': writeId,
          ':maxToken': initialFence(id.slot) + MAX_CLAIMS_PER_SLOT,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      writeId,
    );
    if (result.kind === 'conditionFailed')
      return explainClaimRefusal(result.current ? runFromItem(result.current) : undefined, now, skewMs);
    // Our own claim: as this call committed it, or as its retry found it.
    const claimed = result.kind === 'ok' ? (result.attributes ?? {}) : result.current;
    return { kind: 'claimed', run: runFromItem(claimed), claimedFrom: claimed.claimedFrom as RunStatus };
  }

  /**
   * The lease holder's conditional update: owner, token and status RUNNING must all still match.
   * With a `writeId`, a retry that finds its own earlier commit is reported done.
   */
  private async updateHeld(
    run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken' | 'owner'>,
    sets: readonly string[],
    removes: readonly string[],
    names: Record<string, string>,
    values: Record<string, unknown>,
    writeId?: string,
  ): Promise<LeaseCheck> {
    const sameOwner = '#owner = :me';
    const sameToken = 'fencingToken = :token';
    const stillRunning = '#status = :running';
    const allSets = writeId ? ['lastWrite = :write', ...sets] : sets;
    const result = await this.updateRun(
      run,
      {
        UpdateExpression: `SET ${allSets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: `${sameOwner} AND ${sameToken} AND ${stillRunning}`,
        ExpressionAttributeNames: { '#owner': 'owner', '#status': 'status', ...names },
        ExpressionAttributeValues: {
          ':me': run.owner,
          ':token': run.fencingToken,
          ':running': RunStatus.RUNNING,
          ...(writeId ? { ':write': writeId } : {}),
          ...values,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      // Our own write, committed before its response was lost and retried by the SDK.
      writeId,
    );
    if (result.kind !== 'conditionFailed') return { ok: true };
    return { ok: false, current: result.current ? runFromItem(result.current) : undefined };
  }

  /** Idempotent: a retried heartbeat sets the same lease end again. */
  heartbeat(run: Run, leaseUntil: number): Promise<LeaseCheck> {
    return this.updateHeld(run, ['leaseUntil = :leaseUntil'], [], {}, { ':leaseUntil': leaseUntil });
  }

  /** Idempotent: a retried checkpoint stores the same cursor again. */
  checkpoint(run: Run, cursor: unknown): Promise<LeaseCheck> {
    return this.updateHeld(run, ['#checkpoint = :checkpoint'], [], { '#checkpoint': 'checkpoint' }, { ':checkpoint': cursor ?? null });
  }

  /**
   * Records the attempt's outcome; every transition out of RUNNING is conditional on owner + token.
   * The attempt joins the run's history (the last ATTEMPT_HISTORY_LIMIT are kept). `writeId`
   * makes a retry after a lost response recognise its own commit; pass the same id to every retry
   * of one outcome. An exclusive lane's marker is released by the caller, after this succeeds.
   */
  async complete(run: Run, outcome: Outcome, now: number, facts: AttemptFacts = {}, writeId: string = newWriteId()): Promise<LeaseCheck> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':outcome': outcome.status };
    const sets = ['#status = :outcome'];
    const removes = ['leaseUntil'];
    const ends = outcome.status === RunStatus.SUCCEEDED || outcome.status === RunStatus.DEAD || outcome.status === RunStatus.SUPERSEDED;
    if (ends) {
      sets.push('finishedAt = :now', 'expiresAt = :expiresAt');
      values[':now'] = now;
      values[':expiresAt'] = this.expiresAt(now);
      removes.push('nextAttemptAt');
      if (outcome.status === RunStatus.DEAD) {
        // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
        const keys = deadKeys(run);
        sets.push('openPk = :deadPk', 'openSk = :deadSk');
        values[':deadPk'] = keys.openPk;
        values[':deadSk'] = keys.openSk;
      } else {
        // A finished run needs no watching: leaving the index is a write only if it was in it.
        removes.push('openPk', 'openSk');
      }
    }
    switch (outcome.status) {
      case RunStatus.SUCCEEDED:
        if (outcome.evidence !== undefined) {
          sets.push('evidence = :evidence');
          values[':evidence'] = outcome.evidence;
        }
        // An earlier attempt's error is history (kept in `attempts`), not the run's state.
        removes.push('lastError', 'resultUnknown');
        break;
      case RunStatus.DEAD:
      case RunStatus.SUPERSEDED:
        sets.push('lastError = :lastError');
        values[':lastError'] = outcome.lastError;
        if (outcome.resultUnknown) {
          sets.push('resultUnknown = :true');
          values[':true'] = true;
        } else removes.push('resultUnknown');
        break;
      case RunStatus.RETRY:
      case RunStatus.UNKNOWN:
        sets.push('nextAttemptAt = :next', 'lastError = :lastError');
        values[':next'] = outcome.nextAttemptAt;
        values[':lastError'] = outcome.lastError;
        if (outcome.status === RunStatus.UNKNOWN) {
          sets.push('resultUnknown = :true');
          values[':true'] = true;
        } else removes.push('resultUnknown');
        if (outcome.status === RunStatus.RETRY && outcome.refundAttempt) {
          // The attempt goes on in the next invocation: its timeout keeps counting there.
          sets.push('attempt = attempt - :one', 'attemptElapsed = if_not_exists(attemptElapsed, :zero) + :elapsed');
          values[':one'] = 1;
          values[':zero'] = 0;
          values[':elapsed'] = Math.max(0, Math.round(facts.elapsedMs ?? 0));
        }
        break;
    }
    if (!(outcome.status === RunStatus.RETRY && outcome.refundAttempt)) removes.push('attemptElapsed');
    // History: one map entry per claim, keyed by claim number; the oldest beyond the limit is dropped.
    const claim = claimsOf(run.fencingToken, run.slot);
    const lastError = 'lastError' in outcome ? outcome.lastError : undefined;
    const entry: AttemptRecord = {
      claim,
      token: run.fencingToken,
      owner: run.owner ?? '?',
      ...(facts.from ? { from: facts.from } : {}),
      claimedAt: run.startedAt ?? now,
      endedAt: now,
      outcome: outcome.status,
      ...(lastError ? { code: lastError.code, message: boundMessage(lastError.message, MAX_HISTORY_MESSAGE_CHARS) } : {}),
      // Notes of the attempt ride on this same write: recording them costs no request of its own.
      ...(facts.reconcile ? { reconcile: facts.reconcile } : {}),
      ...(facts.fencedOut ? { fencedOut: facts.fencedOut } : {}),
    };
    names['#entry'] = `c${claim}`;
    values[':entry'] = entry;
    sets.push('attempts.#entry = :entry');
    if (claim > ATTEMPT_HISTORY_LIMIT) {
      names['#dropped'] = `c${claim - ATTEMPT_HISTORY_LIMIT}`;
      removes.push('attempts.#dropped');
    }
    const check = await this.updateHeld(run, sets, removes, names, values, writeId);
    if (check.ok) this.observer?.completed?.(run, outcome);
    return check;
  }

  /**
   * Hands back a claim that must not run yet (forbid-queue: an older run of its lane is open):
   * the run waits again, in the status it was claimed from (UNKNOWN after a takeover: the last
   * holder's result is unknown), its attempt refunded and watched; its token stays advanced.
   * Conditional on our claim (owner, token, RUNNING); a retry recognises its own commit.
   */
  async giveBack(run: Run): Promise<boolean> {
    const writeId = newWriteId();
    const ourClaim = '#status = :running AND #owner = :owner AND fencingToken = :token';
    const back = run.claimedFrom !== undefined && isWaiting(run.claimedFrom) ? run.claimedFrom : RunStatus.UNKNOWN;
    const keys = watchKeys(run);
    const result = await this.updateRun(
      run,
      {
        UpdateExpression:
          'SET #status = :back, attempt = attempt - :one, lastWrite = :write, openPk = :openPk, openSk = :openSk REMOVE #owner, leaseUntil',
        ConditionExpression: ourClaim,
        ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
        ExpressionAttributeValues: {
          ':running': RunStatus.RUNNING,
          ':owner': run.owner ?? '',
          ':token': run.fencingToken,
          ':back': back,
          ':one': 1,
          ':write': writeId,
          ':openPk': keys.openPk,
          ':openSk': keys.openSk,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      writeId,
    );
    return result.kind !== 'conditionFailed';
  }
}
