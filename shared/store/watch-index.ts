/**
 * The sweeper's watch index (DESIGN §7, §8): open runs the window sweep will not visit sit in a
 * sparse GSI under OPEN#bb (bucketed by job, slot and shard), DEAD runs that wait for an operator
 * under DEAD#bb. Putting a run in, re-dispatching it at most once per grace period, taking an
 * ended one out, and the index's pages and counts.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { LEDGER_TABLE, LedgerKeys } from '../core/resources.js';
import { TERMINAL_STATUSES, type Run, type RunId } from '../core/vocabulary.js';
import { openStatusValues, RunTable, watchKeys } from './run-items.js';
import { newWriteId } from './write-id.js';

/** Where a page of the watch index starts: after this entry (its index and table keys). */
export interface WatchCursor {
  readonly openSk: string;
  readonly pk: string;
  readonly sk: string;
}

export class WatchIndex extends RunTable {
  /** Puts an open run in the sweeper's watch index (no-op for a run that ended or vanished). */
  async watch(id: RunId): Promise<boolean> {
    const keys = watchKeys(id);
    const stillOpen = '#status IN (:ready, :retry, :unknown, :running)';
    const notWatched = 'attribute_not_exists(openPk)';
    const result = await this.updateRun(id, {
      UpdateExpression: 'SET openPk = :openPk, openSk = :openSk',
      ConditionExpression: `attribute_exists(pk) AND ${stillOpen} AND ${notWatched}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':openPk': keys.openPk, ':openSk': keys.openSk, ...openStatusValues() },
    });
    return result.kind === 'ok';
  }

  /**
   * Marks a run as re-dispatched now, only if nobody else did within `graceMs` and it has not
   * moved since the sweeper read it: concurrent sweepers then send at most one replacement per
   * grace period. It also puts the run in the watch index. Refused once the run was re-dispatched
   * `maxRedispatches` times without a claim in between: a message that never gets its run claimed
   * stops looping and the run waits for an operator ('exhausted').
   */
  async markRedispatch(run: Run, now: number, graceMs: number, maxRedispatches: number): Promise<'marked' | 'moved' | 'exhausted'> {
    const writeId = newWriteId();
    const keys = watchKeys(run);
    const sameStatus = '#status = :status';
    const sameToken = 'fencingToken = :token';
    const notRecentlyDispatched = '(attribute_not_exists(dispatchedAt) OR dispatchedAt < :recent)';
    const budgetLeft = '(attribute_not_exists(redispatches) OR redispatches < :max)';
    const result = await this.updateRun(
      run,
      {
        UpdateExpression:
          'SET dispatchedAt = :now, redispatches = if_not_exists(redispatches, :zero) + :one, openPk = :openPk, openSk = :openSk, lastWrite = :write',
        ConditionExpression: `${sameStatus} AND ${sameToken} AND ${notRecentlyDispatched} AND ${budgetLeft}`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':status': run.status,
          ':token': run.fencingToken,
          ':now': now,
          ':recent': now - graceMs,
          ':max': maxRedispatches,
          ':zero': 0,
          ':one': 1,
          ':openPk': keys.openPk,
          ':openSk': keys.openSk,
          ':write': writeId,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
      writeId,
    );
    if (result.kind !== 'conditionFailed') return 'marked';
    const current = result.current;
    const moved = !current || current.status !== run.status || current.fencingToken !== run.fencingToken;
    if (!moved && typeof current.redispatches === 'number' && current.redispatches >= maxRedispatches) return 'exhausted';
    return 'moved';
  }

  /** Takes a run out of the watch index once it is found ended (a leftover of an interrupted write). */
  async unwatch(id: RunId): Promise<void> {
    const watchEntry = 'begins_with(openPk, :watchPrefix)';
    const ended = `#status IN (${TERMINAL_STATUSES.map((_, i) => `:t${i}`).join(', ')})`;
    // Refused: the run is not watched, or not ended; either way there is nothing to take out.
    await this.updateRun(id, {
      UpdateExpression: 'REMOVE openPk, openSk',
      // Only a watch entry: a stale one read from the index must not take a DEAD run's DEAD key.
      ConditionExpression: `${watchEntry} AND ${ended}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':watchPrefix': LedgerKeys.openPkPrefix,
        ...Object.fromEntries(TERMINAL_STATUSES.map((s, i) => [`:t${i}`, s])),
      },
    });
  }

  /** One page of watch-index entries of a bucket with slot ≤ `slotUpTo`, after `after` (an index sort key). */
  async watchedPage(bucket: number, slotUpTo: number, after: WatchCursor | undefined, limit: number) {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LEDGER_TABLE.openRunsIndex.name,
        KeyConditionExpression: 'openPk = :bucket AND openSk <= :upTo',
        ExpressionAttributeValues: { ':bucket': LedgerKeys.openPk(bucket), ':upTo': `${new Date(slotUpTo).toISOString()}#\uffff` },
        ExclusiveStartKey: after ? { openPk: LedgerKeys.openPk(bucket), openSk: after.openSk, pk: after.pk, sk: after.sk } : undefined,
        Limit: limit,
      }),
    );
    const entries = (page.Items ?? []).map((item) => ({ pk: item.pk as string, sk: item.sk as string, openSk: item.openSk as string }));
    return { entries, more: page.LastEvaluatedKey !== undefined };
  }

  /**
   * DEAD runs under one bucket's DEAD key (not yet retried or resolved), counted up to `cap`
   * (a gauge need not be exact past it): keys-only index pages, eventually consistent.
   */
  async countOpenDead(bucket: number, cap: number): Promise<number> {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: LEDGER_TABLE.openRunsIndex.name,
          KeyConditionExpression: 'openPk = :bucket',
          ExpressionAttributeValues: { ':bucket': LedgerKeys.deadPk(bucket) },
          Select: 'COUNT',
          Limit: cap - count,
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey && count < cap);
    return Math.min(count, cap);
  }
}
