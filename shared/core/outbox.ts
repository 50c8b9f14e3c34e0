/**
 * The transactional outbox (DESIGN §6): a handler writes its business change and an outbox row in
 * one fenced transaction; the relay publishes each row once per stream record, under an event key
 * fixed when the row was written. A relay retry republishes the same key, never a new one, so
 * consumers dedupe on `eventKey`. Pure: row shape and stream-record → event mapping.
 *
 * Rows expire: each carries `expiresAt` (the ledger's TTL attribute), `retentionDays` after it was
 * written. The relay publishes from the stream's INSERT record, not from the row, so expiry never
 * loses an event; the row is kept only so that a batch the relay gave up on can be republished
 * (its metadata waits in the relay's on-failure queue, at most 14 days). TTL deletes reach the
 * stream as REMOVE records, which are never published.
 */
import { OutboxEventNameError } from './errors.js';
import type { FencedPut } from './fenced-write.js';
import type { Job } from '../schedule/job-schema-core.js';

export const OUTBOX_PK_PREFIX = 'OUTBOX#';
export const OUTBOX_SOURCE = 'fenced-scheduler';

/**
 * Shortest outbox retention: the relay's on-failure queue keeps a failed batch's metadata up to
 * 14 days (SQS's maximum), and the rows it names must still be there to republish.
 */
export const OUTBOX_MIN_RETENTION_DAYS = 14;
/** Default outbox retention in days. */
export const OUTBOX_DEFAULT_RETENTION_DAYS = 14;

export interface OutboxEvent {
  /** Stable across relay retries and worker re-executions of the same run: `runKey#name`. */
  readonly eventKey: string;
  readonly detailType: string;
  readonly detail: Readonly<Record<string, unknown>>;
  readonly job: string;
  readonly runKey: string;
}

/** What an outbox row needs from the run that writes it (a RunContext has all of it). */
export interface OutboxRunContext {
  readonly job: Pick<Job, 'name'>;
  readonly runKey: string;
  readonly tables: { readonly ledger: string; readonly payments: string };
  readonly now: () => number;
  readonly outboxRetentionDays: number;
}

export interface OutboxInput {
  /** Distinguishes several events of one run; with the run key it forms the event key. Not empty, no `#`. */
  readonly name: string;
  readonly detailType: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** Epoch seconds at which a row written at `now` (epoch ms) expires. */
export function outboxExpiresAt(now: number, retentionDays: number): number {
  return Math.floor(now / 1000) + Math.round(retentionDays * 86_400);
}

/**
 * The fenced put of one outbox row, in the ledger (the relay reads the ledger's stream). Its key
 * derives from the run key, so a re-execution of the same run overwrites the row (same event key)
 * instead of adding a second event.
 */
export function outboxPut(ctx: OutboxRunContext, input: OutboxInput): FencedPut {
  // The key joins the run key and the name with `#`, and a sharded run's key ends in `#<shard>`:
  // only a name without `#` keeps every (run, name) pair's key apart (OutboxEventNameError says why).
  if (input.name.length === 0) throw new OutboxEventNameError(ctx.runKey, input.name, 'is empty: it must tell the events of one run apart');
  if (input.name.includes('#'))
    throw new OutboxEventNameError(
      ctx.runKey,
      input.name,
      "contains '#', which joins the run key and the name in the event key: two runs' events could share a key",
    );
  const eventKey = `${ctx.runKey}#${input.name}`;
  return {
    kind: 'put',
    table: ctx.tables.ledger,
    item: {
      pk: `${OUTBOX_PK_PREFIX}${ctx.job.name}`,
      sk: eventKey,
      eventKey,
      job: ctx.job.name,
      runKey: ctx.runKey,
      detailType: input.detailType,
      detail: input.detail,
      expiresAt: outboxExpiresAt(ctx.now(), ctx.outboxRetentionDays),
    },
  };
}

/** The event an outbox row's stream image carries, or undefined for any other item. */
export function outboxEventOf(image: Readonly<Record<string, unknown>> | undefined): OutboxEvent | undefined {
  if (!image || typeof image.pk !== 'string' || !image.pk.startsWith(OUTBOX_PK_PREFIX)) return undefined;
  const { eventKey, detailType, detail, job, runKey } = image;
  if (typeof eventKey !== 'string' || typeof detailType !== 'string' || typeof job !== 'string' || typeof runKey !== 'string')
    return undefined;
  return { eventKey, detailType, detail: (detail ?? {}) as Record<string, unknown>, job, runKey };
}

export interface StreamRecordLike {
  readonly eventName?: string;
  readonly sequenceNumber?: string;
  readonly newImage?: Readonly<Record<string, unknown>>;
}

/**
 * Rows to publish from a batch of stream records: INSERTs only. A MODIFY of an outbox row is a
 * re-execution rewriting the same event key (already published); publishing it again would only
 * hand consumers a duplicate to drop. A REMOVE is the row's TTL expiry (or a delete before a
 * republish): the event went out with the row's INSERT.
 */
export function outboxEventsFrom(records: readonly StreamRecordLike[]): { event: OutboxEvent; sequenceNumber?: string }[] {
  const out: { event: OutboxEvent; sequenceNumber?: string }[] = [];
  for (const record of records) {
    if (record.eventName !== 'INSERT') continue;
    const event = outboxEventOf(record.newImage);
    if (event) out.push({ event, sequenceNumber: record.sequenceNumber });
  }
  return out;
}
