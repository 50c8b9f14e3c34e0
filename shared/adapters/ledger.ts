/**
 * The ledger adapter: DynamoDB calls for watermarks and run items. It marshals, names each
 * condition clause, and maps ConditionalCheckFailedException to domain results using the item
 * DynamoDB returns with the failure (ReturnValuesOnConditionCheckFailure), never an extra read.
 * The rules themselves (what a refusal means, token composition) live in shared/core.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { initialFence, MAX_CLAIMS_PER_SLOT } from '../core/fence.js';
import { explainClaimRefusal, type ClaimResult } from '../core/lease.js';
import { LedgerKeys, LEDGER_TABLE } from '../resources.js';
import { failedItem, isConditionalCheckFailure, unmarshallFailureItem } from './failure-item.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../core/vocabulary.js';

type Item = Record<string, unknown>;

export interface NewRun {
  readonly job: string;
  readonly slot: number;
  readonly shard: number;
  readonly shards: number;
  /** READY for runs to execute; SKIPPED for slots a policy decided not to run (visible to ops). */
  readonly status: typeof RunStatus.READY | typeof RunStatus.SKIPPED;
  readonly reason?: string;
}

export type CreateRunResult = { readonly created: true; readonly run: Run } | { readonly created: false; readonly existing: Run };

export type Outcome =
  | { readonly status: typeof RunStatus.SUCCEEDED; readonly evidence?: unknown }
  | {
      readonly status: typeof RunStatus.RETRY;
      readonly nextAttemptAt: number;
      readonly lastError: { code: string; message: string };
      /** A yield (time ran low) gives the attempt back instead of spending it. */
      readonly refundAttempt?: boolean;
    }
  | { readonly status: typeof RunStatus.UNKNOWN; readonly nextAttemptAt: number; readonly lastError: { code: string; message: string } }
  | { readonly status: typeof RunStatus.DEAD; readonly lastError: { code: string; message: string } };

/** A fenced write on a run was refused: the caller no longer holds the lease. */
export type LeaseCheck = { readonly ok: true } | { readonly ok: false; readonly current: Run | undefined };

export interface PartitionState {
  /** Every job of the partition is planned up to this instant (UTC ms). */
  readonly plannedUntil: number | undefined;
  readonly paused: ReadonlySet<string>;
  /** Jobs planned only up to an earlier slot (catch-up in progress, resumed after a pause). */
  readonly behind: ReadonlyMap<string, number>;
  /** Where each unfinished catch-up ends (absent right after a resume). */
  readonly catchUpEdges: ReadonlyMap<string, number>;
}

export interface LedgerOptions {
  readonly tableName: string;
  /** Days terminal runs stay before TTL removes them. @default 30 */
  readonly retentionDays?: number;
}

/** Per-item reasons of a cancelled transaction, with returned items unmarshalled; undefined for other errors. */
function cancellationReasons(error: unknown): { Code?: string; Item?: Item }[] | undefined {
  if (!(error instanceof TransactionCanceledException) && (error as { name?: string })?.name !== 'TransactionCanceledException') return undefined;
  return ((error as TransactionCanceledException).CancellationReasons ?? []).map((reason) => ({
    Code: reason.Code,
    Item: reason.Item ? unmarshallFailureItem(reason.Item) : undefined,
  }));
}

export function runFromItem(item: Item): Run {
  return {
    job: item.job as string,
    slot: item.slot as number,
    shard: item.shard as number,
    shards: item.shards as number,
    runKey: item.runKey as string,
    status: item.status as RunStatus,
    owner: item.owner as string | undefined,
    leaseUntil: item.leaseUntil as number | undefined,
    fencingToken: item.fencingToken as number,
    attempt: item.attempt as number,
    nextAttemptAt: item.nextAttemptAt as number | undefined,
    lastError: item.lastError as Run['lastError'],
    createdAt: item.createdAt as number,
    dispatchedAt: item.dispatchedAt as number | undefined,
    startedAt: item.startedAt as number | undefined,
    finishedAt: item.finishedAt as number | undefined,
    checkpoint: item.checkpoint,
    evidence: item.evidence,
    expiresAt: item.expiresAt as number | undefined,
  };
}

export class Ledger {
  readonly tableName: string;
  private readonly retentionSeconds: number;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    options: LedgerOptions,
  ) {
    this.tableName = options.tableName;
    this.retentionSeconds = (options.retentionDays ?? 30) * 86_400;
  }

  private runKey(id: RunId) {
    return { pk: LedgerKeys.jobPk(id.job), sk: LedgerKeys.runSk(id.slot, id.shard) };
  }

  // ---------------------------------------------------------------- partition watermark

  async readPartition(partition: number, of: number): Promise<PartitionState> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: LedgerKeys.partitionPk(partition, of), sk: LedgerKeys.watermarkSk },
        ConsistentRead: true,
      }),
    );
    const paused = (Item?.paused as Set<string> | undefined) ?? new Set<string>();
    const behind = new Map(Object.entries((Item?.behind as Record<string, number> | undefined) ?? {}));
    const catchUpEdges = new Map(Object.entries((Item?.catchUpEdge as Record<string, number> | undefined) ?? {}));
    return { plannedUntil: Item?.plannedUntil as number | undefined, paused, behind, catchUpEdges };
  }

  /**
   * Moves the partition watermark forward only, and records which jobs are still behind it.
   * Returns false when a concurrent planner already moved it further (harmless: its work is a
   * superset of ours, every run write being conditional).
   */
  async advancePartition(
    partition: number,
    of: number,
    plannedUntil: number,
    behind: { readonly set: ReadonlyMap<string, number>; readonly edges: ReadonlyMap<string, number>; readonly clear: readonly string[] },
  ): Promise<boolean> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':until': plannedUntil };
    const sets = ['plannedUntil = :until'];
    const removes: string[] = [];
    let i = 0;
    for (const [job, slot] of behind.set) {
      names[`#j${i}`] = job;
      values[`:b${i}`] = slot;
      sets.push(`behind.#j${i} = :b${i}`);
      const edge = behind.edges.get(job);
      if (edge !== undefined) {
        values[`:e${i}`] = edge;
        sets.push(`catchUpEdge.#j${i} = :e${i}`);
      }
      i++;
    }
    for (const job of behind.clear) {
      if (behind.set.has(job)) continue;
      names[`#j${i}`] = job;
      removes.push(`behind.#j${i}`, `catchUpEdge.#j${i}`);
      i++;
    }
    // `behind` must exist as a map before nested SETs; create it on the first advance.
    const firstAdvance = 'attribute_not_exists(plannedUntil)';
    const onlyForward = 'plannedUntil <= :until';
    try {
      if (behind.set.size > 0) {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: LedgerKeys.partitionPk(partition, of), sk: LedgerKeys.watermarkSk },
            UpdateExpression: 'SET behind = if_not_exists(behind, :emptyMap), catchUpEdge = if_not_exists(catchUpEdge, :emptyMap)',
            ExpressionAttributeValues: { ':emptyMap': {} },
          }),
        );
      }
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: LedgerKeys.partitionPk(partition, of), sk: LedgerKeys.watermarkSk },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: `${firstAdvance} OR ${onlyForward}`,
          ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Pauses a job: the planner skips it, and `behind` remembers where it stopped so that resuming
   * plans the missed slots under the job's misfire policy instead of dropping them silently.
   */
  async pauseJob(partition: number, of: number, job: string, now: number): Promise<void> {
    const key = { pk: LedgerKeys.partitionPk(partition, of), sk: LedgerKeys.watermarkSk };
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: key,
        UpdateExpression: 'SET behind = if_not_exists(behind, :emptyMap), catchUpEdge = if_not_exists(catchUpEdge, :emptyMap), plannedUntil = if_not_exists(plannedUntil, :now)',
        ExpressionAttributeValues: { ':emptyMap': {}, ':now': now },
      }),
    );
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: key,
        // The job's own place wins over the partition's: a job already catching up keeps its slot.
        // Dropping the edge makes the resume tick fix a new one: slots after the pause were never planned.
        UpdateExpression: 'ADD paused :job SET behind.#job = if_not_exists(behind.#job, plannedUntil) REMOVE catchUpEdge.#job',
        ExpressionAttributeNames: { '#job': job },
        ExpressionAttributeValues: { ':job': new Set([job]) },
      }),
    );
  }

  /** Resumes a paused job; returns false when it was not paused. */
  async resumeJob(partition: number, of: number, job: string): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: LedgerKeys.partitionPk(partition, of), sk: LedgerKeys.watermarkSk },
          UpdateExpression: 'DELETE paused :job',
          ConditionExpression: 'contains(paused, :name)',
          ExpressionAttributeValues: { ':job': new Set([job]), ':name': job },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  // ---------------------------------------------------------------- runs

  /**
   * Conditional put: at most one run item per (job, slot, shard), whoever calls and however often.
   * `creator` identifies the caller's attempt (a planner tick): when the SDK retries a put whose
   * response was lost after it committed, the retry fails its condition on our own item, and the
   * creator tells us the run is ours to dispatch, not another planner's.
   */
  async createRun(run: NewRun, now: number, creator?: string): Promise<CreateRunResult> {
    const open = run.status === RunStatus.READY;
    const item: Item = {
      ...this.runKey(run),
      ...(creator ? { createdBy: creator } : {}),
      job: run.job,
      slot: run.slot,
      shard: run.shard,
      shards: run.shards,
      runKey: runKeyOf(run.job, run.slot, run.shard, run.shards),
      status: run.status,
      fencingToken: initialFence(run.slot),
      attempt: 0,
      createdAt: now,
      ...(open
        ? { openPk: LedgerKeys.openPk, openSk: LedgerKeys.openSk(run.slot, run.job, run.shard) }
        : { finishedAt: now, expiresAt: Math.floor(now / 1000) + this.retentionSeconds }),
      ...(run.reason ? { lastError: { code: run.status, message: run.reason } } : {}),
    };
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { created: true, run: runFromItem(item) };
    } catch (error) {
      if (isConditionalCheckFailure(error)) {
        const existing = failedItem(error);
        if (existing && creator !== undefined && existing.createdBy === creator) return { created: true, run: runFromItem(existing) };
        if (existing) return { created: false, existing: runFromItem(existing) };
      }
      throw error;
    }
  }

  async getRun(id: RunId, consistent = true): Promise<Run | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: this.runKey(id), ConsistentRead: consistent }),
    );
    return Item ? runFromItem(Item) : undefined;
  }

  /** One active-run marker per (job, shard): overlap policies apply to each shard's lane. */
  private markerKey(job: string, shard: number) {
    return { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.activeSk(shard) };
  }

  /**
   * Claims the run in ONE conditional UpdateItem: sets owner, leaseUntil, status RUNNING,
   * attempt + 1 and fencingToken + 1, returning the new item. A RUNNING run whose lease expired
   * (beyond the clock allowance) is claimable: that is a takeover.
   *
   * With `exclusive` (overlap policies other than parallel) the claim also takes the job's
   * active-run marker in the same transaction, so two runs of the job can never both hold it.
   * Transactions return no item, so the claimed run is then read back (one consistent read).
   */
  async claim(id: RunId, owner: string, now: number, leaseMs: number, skewMs: number, exclusive = false): Promise<ClaimResult> {
    const claimableStatus = '#status IN (:ready, :retry, :unknown)';
    const backoffElapsed = '(attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now)';
    const leaseExpired = '(#status = :running AND leaseUntil < :expiredBefore)';
    const fenceRangeLeft = 'fencingToken < :maxToken';
    const update = {
      TableName: this.tableName,
      Key: this.runKey(id),
      // Operands read the item as it was before this update, so claimedFrom records the
      // status the claim started from (RUNNING means takeover, UNKNOWN means reconcile first).
      UpdateExpression:
        'SET claimedFrom = #status, #status = :running, #owner = :owner, leaseUntil = :leaseUntil, ' +
        'startedAt = :now, fencingToken = fencingToken + :one, attempt = attempt + :one REMOVE nextAttemptAt',
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
        ':maxToken': initialFence(id.slot) + MAX_CLAIMS_PER_SLOT,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    const refusal = (item: Item | undefined) => explainClaimRefusal(item ? runFromItem(item) : undefined, now, skewMs);
    if (!exclusive) {
      try {
        const { Attributes = {} } = await this.doc.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' }));
        return { kind: 'claimed', run: runFromItem(Attributes), claimedFrom: Attributes.claimedFrom as RunStatus };
      } catch (error) {
        if (isConditionalCheckFailure(error)) return refusal(failedItem(error));
        throw error;
      }
    }
    const markerFree = 'attribute_not_exists(pk)';
    const markerOurs = 'holderSk = :holderSk';
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: update },
            {
              Put: {
                TableName: this.tableName,
                Item: { ...this.markerKey(id.job, id.shard), holderSk: LedgerKeys.runSk(id.slot, id.shard), holderSlot: id.slot, since: now },
                ConditionExpression: `${markerFree} OR ${markerOurs}`,
                ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(id.slot, id.shard) },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
          ],
        }),
      );
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return refusal(reasons[0].Item);
      if (reasons[1]?.Code === 'ConditionalCheckFailed' && reasons[1].Item) {
        return { kind: 'blocked', holderSlot: reasons[1].Item.holderSlot as number };
      }
      throw error;
    }
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.runKey(id), ConsistentRead: true }));
    if (!Item) throw new Error(`claimed run ${id.job}@${new Date(id.slot).toISOString()}#${id.shard} vanished`);
    return { kind: 'claimed', run: runFromItem(Item), claimedFrom: Item.claimedFrom as RunStatus };
  }

  private heldUpdate(
    run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken' | 'owner'>,
    update: string,
    names: Record<string, string>,
    values: Record<string, unknown>,
  ) {
    const sameOwner = '#owner = :me';
    const sameToken = 'fencingToken = :token';
    const stillRunning = '#status = :running';
    return {
      TableName: this.tableName,
      Key: this.runKey(run),
      UpdateExpression: update,
      ConditionExpression: `${sameOwner} AND ${sameToken} AND ${stillRunning}`,
      ExpressionAttributeNames: { '#owner': 'owner', '#status': 'status', ...names },
      ExpressionAttributeValues: { ':me': run.owner, ':token': run.fencingToken, ':running': RunStatus.RUNNING, ...values },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  }

  /** Update guarded by the holder's lease: owner, token and status RUNNING must all still match. */
  private async updateHeld(
    run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken' | 'owner'>,
    update: string,
    names: Record<string, string>,
    values: Record<string, unknown>,
    releaseMarker = false,
  ): Promise<LeaseCheck> {
    const held = this.heldUpdate(run, update, names, values);
    try {
      if (!releaseMarker) {
        await this.doc.send(new UpdateCommand(held));
      } else {
        // Release the job's active-run marker with the terminal transition, atomically.
        const markerAbsent = 'attribute_not_exists(pk)';
        const markerOurs = 'holderSk = :holderSk';
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Update: held },
              {
                Delete: {
                  TableName: this.tableName,
                  Key: this.markerKey(run.job, run.shard),
                  ConditionExpression: `${markerAbsent} OR ${markerOurs}`,
                  ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(run.slot, run.shard) },
                },
              },
            ],
          }),
        );
      }
      return { ok: true };
    } catch (error) {
      if (isConditionalCheckFailure(error)) {
        const current = failedItem(error);
        return { ok: false, current: current ? runFromItem(current) : undefined };
      }
      const reasons = cancellationReasons(error);
      if (reasons?.[0]?.Code === 'ConditionalCheckFailed') {
        const current = reasons[0].Item;
        return { ok: false, current: current ? runFromItem(current) : undefined };
      }
      throw error;
    }
  }

  heartbeat(run: Run, leaseUntil: number): Promise<LeaseCheck> {
    return this.updateHeld(run, 'SET leaseUntil = :leaseUntil', {}, { ':leaseUntil': leaseUntil });
  }

  checkpoint(run: Run, cursor: unknown): Promise<LeaseCheck> {
    return this.updateHeld(run, 'SET #checkpoint = :checkpoint', { '#checkpoint': 'checkpoint' }, { ':checkpoint': cursor ?? null });
  }

  /**
   * Records the attempt's outcome; every transition out of RUNNING is conditional on owner + token.
   * `exclusive` runs release the job's active-run marker when they reach a terminal state.
   */
  complete(run: Run, outcome: Outcome, now: number, exclusive = false): Promise<LeaseCheck> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':outcome': outcome.status, ':now': now };
    const sets = ['#status = :outcome', 'finishedAt = :now'];
    const removes = ['leaseUntil'];
    switch (outcome.status) {
      case RunStatus.SUCCEEDED:
        sets.push('expiresAt = :expiresAt');
        values[':expiresAt'] = Math.floor(now / 1000) + this.retentionSeconds;
        if (outcome.evidence !== undefined) {
          sets.push('evidence = :evidence');
          values[':evidence'] = outcome.evidence;
        }
        removes.push('openPk');
        break;
      case RunStatus.DEAD:
        sets.push('expiresAt = :expiresAt', 'lastError = :lastError');
        values[':expiresAt'] = Math.floor(now / 1000) + this.retentionSeconds;
        values[':lastError'] = outcome.lastError;
        removes.push('openPk');
        break;
      case RunStatus.RETRY:
      case RunStatus.UNKNOWN:
        sets.push('nextAttemptAt = :next', 'lastError = :lastError');
        values[':next'] = outcome.nextAttemptAt;
        values[':lastError'] = outcome.lastError;
        if (outcome.status === RunStatus.RETRY && outcome.refundAttempt) {
          sets.push('attempt = attempt - :one');
          values[':one'] = 1;
        }
        break;
    }
    const terminal = outcome.status === RunStatus.SUCCEEDED || outcome.status === RunStatus.DEAD;
    return this.updateHeld(run, `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`, names, values, exclusive && terminal);
  }

  /**
   * Settles a run that is waiting (READY or RETRY, nobody holds it) without running it:
   * SKIPPED by forbid-skip, SUPERSEDED by coalesce. Returns false if it moved meanwhile.
   */
  async settleWaiting(run: Run, status: typeof RunStatus.SKIPPED | typeof RunStatus.SUPERSEDED, reason: string, now: number): Promise<boolean> {
    const waiting = '#status IN (:ready, :retry)';
    const sameToken = 'fencingToken = :token';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKey(run),
          UpdateExpression: 'SET #status = :settled, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason REMOVE openPk, nextAttemptAt',
          ConditionExpression: `${waiting} AND ${sameToken}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':ready': RunStatus.READY,
            ':retry': RunStatus.RETRY,
            ':token': run.fencingToken,
            ':settled': status,
            ':now': now,
            ':expiresAt': Math.floor(now / 1000) + this.retentionSeconds,
            ':reason': { code: status, message: reason },
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Open runs of one job on one side of a slot, nearest first, examining at most `window` run
   * items (bounded work: the overlap policies only ever need the nearest neighbours).
   */
  async openRunsBeside(job: string, slot: number, side: 'before' | 'after', window = 100): Promise<Run[]> {
    const before = side === 'before';
    const { Items = [] } = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: before ? 'pk = :pk AND sk BETWEEN :low AND :mine' : 'pk = :pk AND sk > :mine',
        FilterExpression: '#status IN (:ready, :retry, :unknown, :running)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':pk': LedgerKeys.jobPk(job),
          ':mine': before ? LedgerKeys.runSk(slot, 0) : `${LedgerKeys.runSk(slot, 0).slice(0, -3)}\uffff`,
          ...(before ? { ':low': LedgerKeys.runSkPrefix } : {}),
          ':ready': RunStatus.READY,
          ':retry': RunStatus.RETRY,
          ':unknown': RunStatus.UNKNOWN,
          ':running': RunStatus.RUNNING,
        },
        ScanIndexForward: !before,
        Limit: window,
        ConsistentRead: true,
      }),
    );
    return Items.filter((item) => (item.sk as string).startsWith(LedgerKeys.runSkPrefix) && item.slot !== slot).map(runFromItem);
  }

  /** Runs of one job, newest first unless `ascending`. */
  async listRuns(job: string, options: { limit?: number; ascending?: boolean; sinceSlot?: number } = {}): Promise<Run[]> {
    const sinceClause = options.sinceSlot !== undefined ? 'sk >= :since' : 'begins_with(sk, :prefix)';
    const { Items = [] } = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `pk = :pk AND ${sinceClause}`,
        ExpressionAttributeValues: {
          ':pk': LedgerKeys.jobPk(job),
          ...(options.sinceSlot !== undefined
            ? { ':since': LedgerKeys.runSk(options.sinceSlot, 0) }
            : { ':prefix': LedgerKeys.runSkPrefix }),
        },
        ScanIndexForward: options.ascending ?? false,
        Limit: options.limit,
        ConsistentRead: true,
      }),
    );
    return Items.filter((item) => typeof item.sk === 'string' && item.sk.startsWith(LedgerKeys.runSkPrefix)).map(runFromItem);
  }

  /** Open (non-terminal) runs whose slot is at or before `slotBefore`, oldest first, from the sparse index. */
  async listOpenRuns(slotBefore: number, limit: number): Promise<Run[]> {
    const { Items = [] } = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LEDGER_TABLE.openRunsIndex.name,
        KeyConditionExpression: 'openPk = :open AND openSk <= :before',
        ExpressionAttributeValues: { ':open': LedgerKeys.openPk, ':before': `${new Date(slotBefore).toISOString()}#\uffff` },
        Limit: limit,
      }),
    );
    return Items.map(runFromItem);
  }

  /**
   * Marks a run as re-dispatched now, only if nobody else did within `graceMs`: concurrent
   * sweepers then send at most one replacement message per grace period.
   */
  async markRedispatch(run: Run, now: number, graceMs: number): Promise<boolean> {
    const sameStatus = '#status = :status';
    const notRecentlyDispatched = '(attribute_not_exists(dispatchedAt) OR dispatchedAt < :recent)';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKey(run),
          UpdateExpression: 'SET dispatchedAt = :now',
          ConditionExpression: `${sameStatus} AND ${notRecentlyDispatched}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':status': run.status, ':now': now, ':recent': now - graceMs },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }
}

