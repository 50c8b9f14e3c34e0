/**
 * Ending a run other than by its holder's outcome (DESIGN §6, §8): a spent RUNNING run whose
 * holder vanished, a waiting run settled by an overlap policy, a RUNNING run replaced through the
 * fence. Each is one conditional update stamped with a write id, so a retry after a lost response
 * recognises its own commit.
 */
import { claimsOf } from '../core/fence.js';
import { boundMessage, MAX_HISTORY_MESSAGE_CHARS } from '../core/limits.js';
import { RunStatus, type AttemptRecord, type Run } from '../core/vocabulary.js';
import type { SettledStatus } from './observer.js';
import { deadKeys, RunTable } from './run-items.js';

/** The code of a run's entry and last error when overlap `replace` ended its attempt (not the attempt itself). */
export const REPLACED_CODE = 'REPLACED';
import { newWriteId } from './write-id.js';

export class RunEndings extends RunTable {
  /**
   * Ends DEAD a RUNNING run whose holder took the last claim its fencing range allows and then
   * vanished (its lease expired before `expiredBefore`): nobody can ever claim it again, so it
   * would stay RUNNING forever. Its last attempt may have had its effect: resultUnknown, so a
   * revival reconciles first. Conditional on the token read; true when this write (or its own
   * earlier commit, after a lost response) ended it.
   */
  async endSpentRunning(run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken'>, now: number, expiredBefore: number): Promise<boolean> {
    const running = '#status = :running';
    const sameToken = 'fencingToken = :token';
    const leaseExpired = 'leaseUntil < :expiredBefore';
    const keys = deadKeys(run);
    return this.endOnce(run, {
      // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
      set: '#status = :dead, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason, resultUnknown = :true, openPk = :deadPk, openSk = :deadSk',
      remove: 'nextAttemptAt, leaseUntil',
      condition: [running, sameToken, leaseExpired].join(' AND '),
      values: {
        ':running': RunStatus.RUNNING,
        ':token': run.fencingToken,
        ':expiredBefore': expiredBefore,
        ':dead': RunStatus.DEAD,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': {
          code: 'FENCE_RANGE_EXHAUSTED',
          message: `the holder of the last claim of the fencing range (token ${run.fencingToken}) vanished`,
        },
        ':true': true,
        ':deadPk': keys.openPk,
        ':deadSk': keys.openSk,
      },
    });
  }

  /**
   * Ends a waiting run (READY, RETRY or UNKNOWN: nobody holds it) without running it: SKIPPED by
   * forbid-skip, SUPERSEDED by coalesce, DEAD when its fencing range is spent. Returns false if it
   * moved meanwhile (a claim bumped the token, or it ended).
   */
  async settleWaiting(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & { readonly fencingToken?: number },
    status: SettledStatus,
    reason: string,
    now: number,
  ): Promise<boolean> {
    const waiting = '#status IN (:ready, :retry, :unknown)';
    // Without a token: whatever claims happened before, as long as nobody holds it now.
    const sameToken = run.fencingToken === undefined ? undefined : 'fencingToken = :token';
    // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
    const dead = status === RunStatus.DEAD ? deadKeys(run) : undefined;
    const settled = await this.endOnce(run, {
      set: `#status = :settled, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason${dead ? ', openPk = :deadPk, openSk = :deadSk' : ''}`,
      remove: dead ? 'nextAttemptAt' : 'openPk, openSk, nextAttemptAt',
      condition: sameToken ? `${waiting} AND ${sameToken}` : waiting,
      values: {
        ':ready': RunStatus.READY,
        ':retry': RunStatus.RETRY,
        ':unknown': RunStatus.UNKNOWN,
        ...(sameToken ? { ':token': run.fencingToken } : {}),
        ':settled': status,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': { code: status === RunStatus.DEAD ? 'FENCE_RANGE_EXHAUSTED' : status, message: reason },
        ...(dead ? { ':deadPk': dead.openPk, ':deadSk': dead.openSk } : {}),
      },
    });
    if (settled) this.observer?.settled?.(run, status, reason);
    return settled;
  }

  /**
   * Overlap `replace`: ends a RUNNING run SUPERSEDED by a newer one, through the fence. The token
   * advances, so its holder's next heartbeat and its outcome are refused (it stops, and records
   * nothing), and the replacing run, with a later slot's larger token, fences out its writes on
   * every item it then writes. Conditional on the status and token read; false when it moved.
   */
  async replaceRunning(run: Run, by: string, now: number): Promise<boolean> {
    const claim = claimsOf(run.fencingToken, run.slot);
    const entry: AttemptRecord = {
      claim,
      token: run.fencingToken,
      owner: run.owner ?? '?',
      claimedAt: run.startedAt ?? now,
      endedAt: now,
      outcome: RunStatus.SUPERSEDED,
      code: REPLACED_CODE,
      message: boundMessage(`replaced by ${by}`, MAX_HISTORY_MESSAGE_CHARS),
    };
    return this.endOnce(run, {
      // The replaced attempt was running: what it did is unknown, so a revival reconciles first.
      set: '#status = :superseded, fencingToken = fencingToken + :one, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason, attempts.#entry = :entry, resultUnknown = :true',
      remove: 'leaseUntil, openPk, openSk, nextAttemptAt',
      condition: '#status = :running AND fencingToken = :token',
      names: { '#entry': `c${claim}` },
      values: {
        ':superseded': RunStatus.SUPERSEDED,
        ':running': RunStatus.RUNNING,
        ':token': run.fencingToken,
        ':one': 1,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': { code: REPLACED_CODE, message: `replaced by ${by}` },
        ':entry': entry,
        ':true': true,
      },
    });
  }

  /**
   * One conditional update that ends a run, stamped with a write id: true when it committed, or
   * when the condition failed on the item our own earlier attempt wrote (the SDK retried it after
   * a lost response); false when the run moved meanwhile. `#status` is named; the write id is set
   * beside `set` (so no caller can leave it out).
   */
  private async endOnce(
    run: Pick<Run, 'job' | 'slot' | 'shard'>,
    end: {
      readonly set: string;
      readonly remove: string;
      readonly condition: string;
      readonly names?: Record<string, string>;
      readonly values: Record<string, unknown>;
    },
  ): Promise<boolean> {
    const writeId = newWriteId();
    const { set, remove, condition, names = {}, values } = end;
    const result = await this.updateRun(
      run,
      {
        UpdateExpression: `SET lastWrite = :write, ${set} REMOVE ${remove}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#status': 'status', ...names },
        ExpressionAttributeValues: { ...values, ':write': writeId },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      writeId,
    );
    return result.kind !== 'conditionFailed';
  }
}
