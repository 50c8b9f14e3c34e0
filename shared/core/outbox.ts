/**
 * The transactional outbox (DESIGN §6): a handler writes its business change and an outbox row in
 * one fenced transaction; the relay publishes each row once per stream record, under an event key
 * fixed when the row was written. A relay retry republishes the same key, never a new one, so
 * consumers dedupe on `eventKey`. Pure: row shape and stream-record → event mapping.
 */
import type { FencedPut } from '../handler-api.js';

export const OUTBOX_PK_PREFIX = 'OUTBOX#';
export const OUTBOX_SOURCE = 'fenced-scheduler';

export interface OutboxEvent {
  /** Stable across relay retries and worker re-executions of the same run: `runKey#name`. */
  readonly eventKey: string;
  readonly detailType: string;
  readonly detail: Readonly<Record<string, unknown>>;
  readonly job: string;
  readonly runKey: string;
}

export interface OutboxInput {
  readonly table: string;
  readonly job: string;
  readonly runKey: string;
  /** Distinguishes several events of one run; with the run key it forms the event key. */
  readonly name: string;
  readonly detailType: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/**
 * The fenced put of one outbox row. Its key derives from the run key, so a re-execution of the
 * same run overwrites the row (same event key) instead of adding a second event.
 */
export function outboxPut(input: OutboxInput): FencedPut {
  const eventKey = `${input.runKey}#${input.name}`;
  return {
    kind: 'put',
    table: input.table,
    item: {
      pk: `${OUTBOX_PK_PREFIX}${input.job}`,
      sk: eventKey,
      eventKey,
      job: input.job,
      runKey: input.runKey,
      detailType: input.detailType,
      detail: input.detail,
    },
  };
}

/** The event an outbox row's stream image carries, or undefined for any other item. */
export function outboxEventOf(image: Readonly<Record<string, unknown>> | undefined): OutboxEvent | undefined {
  if (!image || typeof image.pk !== 'string' || !image.pk.startsWith(OUTBOX_PK_PREFIX)) return undefined;
  const { eventKey, detailType, detail, job, runKey } = image;
  if (typeof eventKey !== 'string' || typeof detailType !== 'string' || typeof job !== 'string' || typeof runKey !== 'string') return undefined;
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
 * hand consumers a duplicate to drop.
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
