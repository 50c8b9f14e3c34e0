/**
 * Ledger calls that only operators make (the ops CLI, DESIGN §2): paginated run queries for
 * `status`/`runs`, the raw item for `show`, and the two conditional repairs, `reviveRun` (redrive)
 * and `resolveRun` (resolve). Like the Ledger adapter, every write is one conditional UpdateItem
 * and a refusal hands back the item DynamoDB returned with the failed check, never an extra read.
 *
 * Both repairs are conditional on the status AND the fencing token the operator saw: a worker that
 * claimed the run in between (token + 1) always wins over the operator.
 */
import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { claimsOf, MAX_CLAIMS_PER_SLOT } from '../core/fence.js';
import { isTerminal, RunStatus, type Run, type RunId } from '../core/vocabulary.js';
import { LedgerKeys } from '../core/resources.js';
import { idOfKey, runFromItem, watchKeys } from './ledger.js';
import { conditionalWrite, wroteBy } from './conditional.js';
import { newWriteId } from './write-id.js';

type Item = Record<string, unknown>;

export interface LedgerOpsOptions {
  readonly tableName: string;
  /** Days resolved (terminal) runs stay before TTL removes them. @default 30 */
  readonly retentionDays?: number;
  /**
   * An operator's clock is not a worker's: an ops command takes over a RUNNING run only once its
   * lease is this long past its end by the operator's clock (unless forced). @default 60 s
   */
  readonly takeoverMarginMs?: number;
}

/** The operator's clock may be this far off the workers' before a live lease could be taken. */
export const OPS_TAKEOVER_MARGIN_MS = 60_000;

export interface RunQuery {
  /** Only runs whose slot is at or after this instant (UTC ms). */
  readonly sinceSlot?: number;
  /** Only runs whose slot is before this instant (UTC ms). */
  readonly untilSlot?: number;
  /** Only runs in one of these statuses. */
  readonly statuses?: readonly RunStatus[];
  /** Most runs returned. @default unbounded (pages until done) */
  readonly limit?: number;
  /** @default false: newest first */
  readonly ascending?: boolean;
}

/** A run as a list row shows it (LedgerOps.runSummaries). */
export type RunSummary = Pick<Run, 'slot' | 'shard' | 'runKey' | 'status' | 'lastError'>;

/** The answer to a conditional repair: done, or refused with the item as it was at the check. */
export type RepairResult = { readonly ok: true; readonly run: Run } | { readonly ok: false; readonly current: Run | undefined };

export type ResolveAs = 'succeeded' | 'dead';

export interface Resolution {
  readonly as: ResolveAs;
  readonly reason: string;
  /** Who resolved it (an operator name). */
  readonly by: string;
  /** Epoch ms. */
  readonly at: number;
  /** The status the run was resolved from. */
  readonly from: RunStatus;
}

/** Options of a repair that may take over a RUNNING run. */
export interface TakeoverOptions {
  /** Take over a RUNNING run even if its lease does not look expired by the margin. @default false */
  readonly force?: boolean;
}

/** Why a run cannot be resolved as it stands (undefined: it can). */
export function resolveRefusal(
  run: Run,
  now: number,
  marginMs: number = OPS_TAKEOVER_MARGIN_MS,
  options: TakeoverOptions = {},
): string | undefined {
  if (run.status === RunStatus.RUNNING && !options.force && !leaseExpired(run, now, marginMs)) {
    return `${run.runKey} is RUNNING with a lease until ${iso(run.leaseUntil)} (owner ${run.owner ?? '?'}), not ${Math.round(marginMs / 1000)}s past by this machine's clock: wait for it to finish or expire, or pass --force if you know the worker is gone`;
  }
  if (run.status !== RunStatus.DEAD && isTerminal(run.status)) {
    return `${run.runKey} is already ${run.status}: only open runs and DEAD runs can be resolved`;
  }
  return undefined;
}

/** Whether redrive should give the run a fresh attempt budget. */
export function needsRevival(run: Run, maxAttempts: number | undefined, now: number, marginMs: number = OPS_TAKEOVER_MARGIN_MS): boolean {
  if (run.status === RunStatus.DEAD) return true;
  // A worker crash-looped on its last attempt: the lease lapsed and no attempt is left.
  return run.status === RunStatus.RUNNING && leaseExpired(run, now, marginMs) && maxAttempts !== undefined && run.attempt >= maxAttempts;
}

export function leaseExpired(run: Pick<Run, 'leaseUntil'>, now: number, marginMs: number): boolean {
  return (run.leaseUntil ?? 0) < now - marginMs;
}

/**
 * The status a revived run restarts from: UNKNOWN (its next claim reconciles first) when its last
 * attempt may have had its effect, else READY.
 */
export function revivalStatus(run: Pick<Run, 'status' | 'resultUnknown'>): typeof RunStatus.READY | typeof RunStatus.UNKNOWN {
  return run.resultUnknown || run.status === RunStatus.RUNNING || run.status === RunStatus.UNKNOWN ? RunStatus.UNKNOWN : RunStatus.READY;
}

/**
 * Why a run cannot be revived, if it cannot: a run whose fencing range is spent can never be
 * claimed again (no token above its last would stay below the next slot's), so reviving it would
 * only send it back to DEAD without running. The work can still be done once by `ops trigger`.
 */
export function revivalRefusal(run: Pick<Run, 'job' | 'slot' | 'fencingToken'>): string | undefined {
  if (claimsOf(run.fencingToken, run.slot) < MAX_CLAIMS_PER_SLOT) return undefined;
  return `its fencing range is spent (${MAX_CLAIMS_PER_SLOT} claims): it can never be claimed again; run the job once now with \`ops trigger ${run.job}\``;
}

function iso(ms: number | undefined): string {
  return ms === undefined ? '?' : new Date(ms).toISOString();
}

export class LedgerOps {
  readonly tableName: string;
  private readonly retentionSeconds: number;
  readonly takeoverMarginMs: number;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    options: LedgerOpsOptions,
  ) {
    this.tableName = options.tableName;
    this.retentionSeconds = (options.retentionDays ?? 30) * 86_400;
    this.takeoverMarginMs = options.takeoverMarginMs ?? OPS_TAKEOVER_MARGIN_MS;
  }

  private key(id: RunId) {
    return { pk: LedgerKeys.jobPk(id.job), sk: LedgerKeys.runSk(id.slot, id.shard) };
  }

  /** The run item exactly as stored (every attribute, including ones the Run type does not name). */
  async getRunItem(id: RunId): Promise<Item | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.key(id), ConsistentRead: true }));
    return Item;
  }

  /** Runs of one job in a slot range, paginating until `limit` or the end of the range. */
  async queryRuns(job: string, query: RunQuery = {}): Promise<Run[]> {
    const out: Run[] = [];
    for await (const item of this.pages(job, query, undefined)) {
      out.push(runFromItem(item));
      if (query.limit !== undefined && out.length >= query.limit) break;
    }
    return out;
  }

  /**
   * The slot and status of a job's runs in a slot range, newest first, at most `limit` (projects
   * only the key and the status: a chart's read, a few bytes a run).
   */
  async runStatuses(
    job: string,
    query: Pick<RunQuery, 'sinceSlot' | 'untilSlot'> & { readonly limit: number },
  ): Promise<{ slot: number; status: RunStatus }[]> {
    const out: { slot: number; status: RunStatus }[] = [];
    for await (const item of this.pages(job, query, ['#status', 'sk'])) {
      out.push({ slot: idOfKey({ pk: LedgerKeys.jobPk(job), sk: item.sk as string }).slot, status: item.status as RunStatus });
      if (out.length >= query.limit) break;
    }
    return out;
  }

  /**
   * A job's runs in a slot range as a list row shows them, newest first, at most `limit`: the
   * key, run key, status and last error only (no attempts, checkpoint or evidence), so a page of
   * rows receives and decodes a few bytes a run instead of whole items.
   */
  async runSummaries(job: string, query: Pick<RunQuery, 'sinceSlot' | 'untilSlot'> & { readonly limit: number }): Promise<RunSummary[]> {
    const out: RunSummary[] = [];
    for await (const item of this.pages(job, query, ['sk', 'runKey', '#status', 'lastError'])) {
      const { slot, shard } = idOfKey({ pk: LedgerKeys.jobPk(job), sk: item.sk as string });
      out.push({
        slot,
        shard,
        runKey: item.runKey as string,
        status: item.status as RunStatus,
        lastError: item.lastError as Run['lastError'],
      });
      if (out.length >= query.limit) break;
    }
    return out;
  }

  /** Counts of a job's runs by status in a slot range (projects only the status; pages to the end). */
  async countRuns(job: string, query: Pick<RunQuery, 'sinceSlot' | 'untilSlot'> = {}): Promise<Partial<Record<RunStatus, number>>> {
    const counts: Partial<Record<RunStatus, number>> = {};
    for await (const item of this.pages(job, query, ['#status', 'sk'])) {
      const status = item.status as RunStatus;
      counts[status] = (counts[status] ?? 0) + 1;
    }
    return counts;
  }

  private async *pages(job: string, query: RunQuery, projection: readonly string[] | undefined): AsyncGenerator<Item> {
    // Sort keys are RUN#<slotISO>#<shard>; ISO strings of the same length sort like instants.
    const lower = query.sinceSlot !== undefined ? LedgerKeys.runSk(query.sinceSlot, 0) : LedgerKeys.runSkPrefix;
    const upper = query.untilSlot !== undefined ? LedgerKeys.runSk(query.untilSlot, 0) : `${LedgerKeys.runSkPrefix}\uffff`;
    if (lower >= upper) return;
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':pk': LedgerKeys.jobPk(job), ':lo': lower, ':hi': upper };
    let filter: string | undefined;
    if (query.statuses && query.statuses.length > 0) {
      names['#status'] = 'status';
      filter = `#status IN (${query.statuses.map((_, i) => `:s${i}`).join(', ')})`;
      query.statuses.forEach((status, i) => (values[`:s${i}`] = status));
    }
    if (projection?.includes('#status')) names['#status'] = 'status';
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          // BETWEEN is inclusive: `hi` is the first key of untilSlot (shard 000), excluded below.
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
          FilterExpression: filter,
          ProjectionExpression: projection?.join(', '),
          // A bounded read without a filter asks for what it keeps (and the one past `untilSlot`
          // the key range may hold), not a whole 1 MB page: a newest-first page of a job with
          // 100,000 runs reads 21 items, not thousands. A filtered one pages in full: its matches
          // may be sparse.
          Limit: query.limit !== undefined && filter === undefined ? query.limit + 1 : undefined,
          ExpressionAttributeNames: Object.keys(names).length > 0 ? names : undefined,
          ExpressionAttributeValues: values,
          ScanIndexForward: query.ascending ?? false,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        if (typeof item.sk !== 'string' || !item.sk.startsWith(LedgerKeys.runSkPrefix)) continue;
        if (query.untilSlot !== undefined && item.sk >= upper) continue;
        yield item;
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  /**
   * Gives a DEAD run (or a RUNNING one whose lease lapsed) a fresh attempt budget: attempt 0, in
   * the sweeper's watch index, dispatched now (the caller sends or moves its message). It restarts
   * UNKNOWN when its last attempt's result is unknown (it ended UNKNOWN or timed out, or its
   * holder vanished), so the next claim reconciles before running it again; else READY. Taking a
   * RUNNING run advances its fence like a worker's takeover, so a holder that is alive after all
   * has its heartbeats and outcome refused. Refused when the status or the token changed since
   * `run` was read, or (unless forced) when a RUNNING run's lease is not past by the margin.
   */
  async reviveRun(run: Run, options: { now: number; by?: string; reason?: string } & TakeoverOptions): Promise<RepairResult> {
    const running = run.status === RunStatus.RUNNING;
    const keys = watchKeys(run);
    const values: Record<string, unknown> = {
      ':seen': run.status,
      ':seenToken': run.fencingToken,
      ':to': revivalStatus(run),
      ':zero': 0,
      ':openPk': keys.openPk,
      ':openSk': keys.openSk,
      ':now': options.now,
      ':one': 1,
      ':noAttempts': {},
      ':revival': {
        at: options.now,
        by: options.by ?? 'ops',
        from: run.status,
        attempts: run.attempt,
        ...(options.reason ? { reason: options.reason } : {}),
      },
    };
    const sets = [
      '#status = :to',
      'attempt = :zero',
      'openPk = :openPk',
      'openSk = :openSk',
      'dispatchedAt = :now',
      'revivals = if_not_exists(revivals, :zero) + :one',
      'lastRevival = :revival',
      // A run created terminal (a slot a policy skipped) has no history map, and an outcome's
      // entry can only be set inside one: without it every outcome write of the revived run fails.
      'attempts = if_not_exists(attempts, :noAttempts)',
    ];
    if (running) sets.push('fencingToken = fencingToken + :one');
    const conditions = ['#status = :seen', 'fencingToken = :seenToken'];
    if (running && !options.force) {
      conditions.push('leaseUntil < :expiredBefore');
      values[':expiredBefore'] = options.now - this.takeoverMarginMs;
    }
    return this.repair(
      run,
      `SET ${sets.join(', ')} REMOVE nextAttemptAt, expiresAt, finishedAt, leaseUntil, #owner, redispatches, attemptElapsed`,
      conditions.join(' AND '),
      values,
    );
  }

  /**
   * Closes a run by hand: `succeeded` → MANUAL with the resolution recorded; `dead` → DEAD with
   * lastError RESOLVED. Either way it leaves the watch index and gets a TTL like any terminal run.
   * Conditional on the status and token the operator saw, so a worker that claimed meanwhile
   * wins. A RUNNING run is taken over like a worker would (its fence advances, so the old holder's
   * heartbeats and outcome are refused), and only once its lease is past by the margin, unless forced.
   */
  async resolveRun(run: Run, resolution: Omit<Resolution, 'from'>, options: TakeoverOptions = {}): Promise<RepairResult> {
    const running = run.status === RunStatus.RUNNING;
    const record: Resolution = { ...resolution, from: run.status };
    const values: Record<string, unknown> = {
      ':seen': run.status,
      ':seenToken': run.fencingToken,
      ':resolution': record,
      ':now': resolution.at,
      ':expiresAt': Math.floor(resolution.at / 1000) + this.retentionSeconds,
    };
    const sets = ['#status = :to', 'resolution = :resolution', 'finishedAt = :now', 'expiresAt = :expiresAt'];
    if (resolution.as === 'succeeded') {
      values[':to'] = RunStatus.MANUAL;
    } else {
      values[':to'] = RunStatus.DEAD;
      values[':lastError'] = { code: 'RESOLVED', message: resolution.reason };
      sets.push('lastError = :lastError');
      // Closed while an attempt may have been applying its effect (a vanished holder, a result
      // already unknown): a later `ops retry` must reconcile before running it again.
      if (revivalStatus(run) === RunStatus.UNKNOWN) {
        sets.push('resultUnknown = :true');
        values[':true'] = true;
      }
    }
    if (running) {
      sets.push('fencingToken = fencingToken + :one');
      values[':one'] = 1;
    }
    const conditions = ['#status = :seen', 'fencingToken = :seenToken'];
    if (running && !options.force) {
      conditions.push('leaseUntil < :expiredBefore');
      values[':expiredBefore'] = resolution.at - this.takeoverMarginMs;
    }
    return this.repair(
      run,
      `SET ${sets.join(', ')} REMOVE openPk, openSk, nextAttemptAt, leaseUntil, redispatches`,
      conditions.join(' AND '),
      values,
    );
  }

  /** One conditional update; its write id makes a retry after a lost response find its own commit. */
  private async repair(run: Run, update: string, condition: string, values: Record<string, unknown>): Promise<RepairResult> {
    const names: Record<string, string> = { '#status': 'status' };
    if (update.includes('#owner')) names['#owner'] = 'owner';
    const writeId = newWriteId();
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(run),
        UpdateExpression: update.replace(/^SET /, 'SET lastWrite = :write, '),
        ConditionExpression: `attribute_exists(pk) AND ${condition}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ':write': writeId },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      { ownCommit: wroteBy(writeId) },
    );
    if (result.kind === 'ok') return { ok: true, run: runFromItem(result.attributes ?? {}) };
    if (result.kind === 'ownCommit') return { ok: true, run: runFromItem(result.current) };
    return { ok: false, current: result.current ? runFromItem(result.current) : undefined };
  }
}
