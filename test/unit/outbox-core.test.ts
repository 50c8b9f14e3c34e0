/**
 * The outbox's pure part (shared/core/outbox.ts): the row a handler writes and what the relay makes
 * of stream records. Hazards: an event published twice under two keys (consumers cannot dedupe) or
 * never (a row the relay does not recognise, a failed record it cannot name so the batch counts as
 * done), a run item or a TTL expiry published as an event, a row that never expires or expires
 * before the relay's retry window.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { OutboxEventNameError, PermanentError } from '../../shared/handler-api.js';
import {
  OUTBOX_DEFAULT_RETENTION_DAYS,
  OUTBOX_MIN_RETENTION_DAYS,
  OUTBOX_PK_PREFIX,
  outboxEventOf,
  outboxEventsFrom,
  outboxExpiresAt,
  outboxPut,
  type OutboxRunContext,
  type StreamRecordLike,
} from '../../shared/core/outbox.js';

const DAY_S = 86_400;
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0, 250);

const jobNamed = (name: string): Job => parseJobs([{ name, schedule: '* * * * *', handler: 'h' }], { handlers: ['h'] })[0]!;

function ctx(overrides: { job?: string; runKey?: string; now?: number; days?: number } = {}): OutboxRunContext {
  const job = jobNamed(overrides.job ?? 'payments');
  return {
    job,
    runKey: overrides.runKey ?? `${job.name}@2026-12-01T12:00:00.000Z`,
    tables: { ledger: 'ledger-table', payments: 'payments-table' },
    now: () => overrides.now ?? T0,
    outboxRetentionDays: overrides.days ?? OUTBOX_DEFAULT_RETENTION_DAYS,
  };
}

const jobName = fc.stringMatching(/^[a-z]([a-z0-9-]{0,14}[a-z0-9])?$/);
/** Event names of one run; without `#`, which joins the run key and the name. */
const eventName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9.-]{0,15}$/);
const slotIso = fc.integer({ min: T0, max: T0 + 365 * DAY_S * 1000 }).map((ms) => new Date(ms - (ms % 60_000)).toISOString());
const runKeyOf = (job: string, iso: string, shard?: number) => `${job}@${iso}${shard === undefined ? '' : `#${shard}`}`;
const detail = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });

describe('outboxPut: the row a handler writes', () => {
  it("refuses an event name with '#': with it, two runs' events could share one key and the second row overwrite the first", () => {
    // The collision the rule prevents: shard 1's run with event "x" and the unsharded run of the
    // same slot (the job's shard count changed) with event "1#x" both join to "…Z#1#x".
    const sharded = ctx({ runKey: runKeyOf('payments', '2026-12-01T12:00:00.000Z', 1) });
    const unsharded = ctx({ runKey: runKeyOf('payments', '2026-12-01T12:00:00.000Z') });
    expect(outboxPut(sharded, { name: 'x', detailType: 'T', detail: {} }).kind).toBe('put');
    expect(() => outboxPut(unsharded, { name: '1#x', detailType: 'T', detail: {} })).toThrow(OutboxEventNameError);
    expect(() => outboxPut(unsharded, { name: '1#x', detailType: 'T', detail: {} })).toThrow(/"1#x" contains '#'/);
    expect(() => outboxPut(unsharded, { name: '', detailType: 'T', detail: {} })).toThrow(/is empty/);
    const error = (() => {
      try {
        outboxPut(unsharded, { name: 'a#b', detailType: 'T', detail: {} });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    // Permanent: the worker ends the run instead of retrying the same name.
    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toMatchObject({ name: 'OutboxEventNameError', code: 'OUTBOX_EVENT_NAME', runKey: unsharded.runKey, eventName: 'a#b' });
  });

  it('distinct (run, name) pairs always get distinct event keys', () => {
    fc.assert(
      fc.property(
        fc.tuple(slotIso, fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }), eventName),
        fc.tuple(slotIso, fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }), eventName),
        (a, b) => {
          const keyOf = ([iso, shard, name]: typeof a) =>
            outboxPut(ctx({ runKey: runKeyOf('payments', iso, shard) }), { name, detailType: 'T', detail: {} }).item.eventKey;
          const same = a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
          expect(keyOf(a) === keyOf(b)).toBe(same);
        },
      ),
    );
  });

  it('the relay publishes exactly the event the handler wrote (job, run key, type, detail)', () => {
    fc.assert(
      fc.property(jobName, slotIso, eventName, fc.string({ minLength: 1, maxLength: 20 }), detail, (job, iso, name, detailType, d) => {
        const runKey = runKeyOf(job, iso);
        const put = outboxPut(ctx({ job, runKey }), { name, detailType, detail: d });
        expect(outboxEventOf(put.item)).toEqual({ eventKey: `${runKey}#${name}`, detailType, detail: d, job, runKey });
      }),
    );
  });

  it('a re-execution of the run rewrites the same row under the same key: consumers never get a second event', () => {
    fc.assert(
      fc.property(
        jobName,
        slotIso,
        eventName,
        detail,
        detail,
        fc.integer({ min: 0, max: 10 * DAY_S * 1000 }),
        (job, iso, name, first, second, later) => {
          const runKey = runKeyOf(job, iso);
          const a = outboxPut(ctx({ job, runKey, now: T0 }), { name, detailType: 'T', detail: first });
          const b = outboxPut(ctx({ job, runKey, now: T0 + later }), { name, detailType: 'T', detail: second });
          expect([b.item.pk, b.item.sk, b.item.eventKey]).toEqual([a.item.pk, a.item.sk, a.item.eventKey]);
        },
      ),
    );
  });

  it('distinct events (another name, another slot, another shard, another job) get distinct rows and keys: none overwrites another', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(jobName, slotIso, fc.option(fc.nat(3), { nil: undefined }), eventName), {
          minLength: 2,
          maxLength: 12,
          selector: ([j, s, sh, n]) => `${j}|${s}|${sh}|${n}`,
        }),
        (events) => {
          const items = events.map(
            ([job, iso, shard, name]) =>
              outboxPut(ctx({ job, runKey: runKeyOf(job, iso, shard) }), { name, detailType: 'T', detail: {} }).item,
          );
          expect(new Set(items.map((i) => `${i.pk}|${i.sk}`)).size).toBe(events.length);
          expect(new Set(items.map((i) => i.eventKey)).size).toBe(events.length);
        },
      ),
    );
  });

  it('goes to the ledger table, whose stream the relay reads, as a fenced put (never the business table)', () => {
    const put = outboxPut(ctx(), { name: 'settled', detailType: 'PaymentSettled', detail: { id: 1 } });
    expect(put.kind).toBe('put');
    expect(put.table).toBe('ledger-table');
    expect(String(put.item.pk).startsWith(OUTBOX_PK_PREFIX)).toBe(true);
  });

  it("expires the configured retention after the run's own clock, not the machine's", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: T0, max: T0 + 10 * 365 * DAY_S * 1000 }),
        fc.integer({ min: OUTBOX_MIN_RETENTION_DAYS, max: 400 }),
        (now, days) => {
          const put = outboxPut(ctx({ now, days }), { name: 'e', detailType: 'T', detail: {} });
          expect(put.item.expiresAt).toBe(outboxExpiresAt(now, days));
        },
      ),
    );
  });
});

describe('outboxExpiresAt: the TTL attribute', () => {
  it('is in epoch seconds, retentionDays after the write to the second (ms would keep rows for ever; too early loses what the relay may republish)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.integer({ min: 1, max: 3_650 * 4 }).map((quarters) => quarters / 4),
        (now, days) => {
          const at = outboxExpiresAt(now, days);
          expect(Number.isInteger(at)).toBe(true);
          const exact = now / 1000 + days * DAY_S;
          expect(at).toBeGreaterThan(exact - 1);
          expect(at).toBeLessThanOrEqual(exact);
        },
      ),
    );
  });

  it('the default retention outlasts the on-failure queue that names rows to republish (14 days)', () => {
    expect(outboxExpiresAt(T0, OUTBOX_DEFAULT_RETENTION_DAYS) - Math.floor(T0 / 1000)).toBeGreaterThanOrEqual(
      OUTBOX_MIN_RETENTION_DAYS * DAY_S,
    );
  });
});

/** An outbox row's stream image, as the relay unmarshals it. */
function row(job = 'payments', runKey = `${job}@2026-12-01T12:00:00.000Z`, name = 'settled'): Record<string, unknown> {
  return outboxPut(ctx({ job, runKey }), { name, detailType: 'PaymentSettled', detail: { id: name } }).item;
}

describe('outboxEventOf: which items are events', () => {
  it('no other item of the ledger is ever published: run items, planner state, lane markers', () => {
    const others: Record<string, unknown>[] = [
      { pk: 'JOB#payments', sk: 'RUN#2026-12-01T12:00:00.000Z#0', job: 'payments', runKey: 'payments@x', eventKey: 'k', detailType: 'T' },
      { pk: 'PLANNER#layout', sk: 'LAYOUT', eventKey: 'k', detailType: 'T', job: 'j', runKey: 'r' },
      { pk: `LANE#${OUTBOX_PK_PREFIX}`, sk: 'x', eventKey: 'k', detailType: 'T', job: 'j', runKey: 'r' },
      { pk: OUTBOX_PK_PREFIX.toLowerCase() + 'payments', sk: 'x', eventKey: 'k', detailType: 'T', job: 'j', runKey: 'r' },
      { pk: 42, eventKey: 'k', detailType: 'T', job: 'j', runKey: 'r' },
      { eventKey: 'k', detailType: 'T', job: 'j', runKey: 'r' },
    ];
    for (const item of others) expect(outboxEventOf(item), JSON.stringify(item)).toBeUndefined();
    expect(outboxEventOf(undefined)).toBeUndefined();
  });

  it('a row missing its key, type, job or run key is not published under an undefined one', () => {
    for (const field of ['eventKey', 'detailType', 'job', 'runKey']) {
      for (const value of [undefined, 7, null, { S: 'x' }]) {
        expect(outboxEventOf({ ...row(), [field]: value }), `${field}: ${JSON.stringify(value)}`).toBeUndefined();
      }
    }
  });

  it('a row without detail is published with an empty detail (consumers always get an object)', () => {
    const { detail: _omitted, ...bare } = row();
    expect(outboxEventOf(bare)?.detail).toEqual({});
  });
});

describe('outboxEventsFrom: a batch of stream records', () => {
  const kind = fc.constantFrom('INSERT', 'MODIFY', 'REMOVE', undefined);
  const image = fc.oneof(
    fc.tuple(jobName, eventName).map(([job, name]) => row(job, `${job}@2026-12-01T12:00:00.000Z`, name)),
    fc.constant({ pk: 'JOB#payments', sk: 'RUN#1', job: 'payments' }),
    fc.constant(undefined),
  );
  const record: fc.Arbitrary<StreamRecordLike> = fc.record(
    { eventName: kind, sequenceNumber: fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }), newImage: image },
    { requiredKeys: [] },
  );

  it('publishes the INSERTs of outbox rows only, in stream order: a re-execution (MODIFY) or a TTL expiry (REMOVE) is never a second event', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), (records) => {
        const expected = records
          .filter((r) => r.eventName === 'INSERT' && typeof r.newImage?.pk === 'string' && r.newImage.pk.startsWith(OUTBOX_PK_PREFIX))
          .map((r) => ({ eventKey: r.newImage!.eventKey, sequenceNumber: r.sequenceNumber }));
        expect(outboxEventsFrom(records).map((o) => ({ eventKey: o.event.eventKey, sequenceNumber: o.sequenceNumber }))).toEqual(expected);
      }),
    );
  });

  it("keeps each event's sequence number, so a failed publish names its record and the stream retries from it (none lost, none before it resent)", () => {
    const records: StreamRecordLike[] = [
      { eventName: 'INSERT', sequenceNumber: '100', newImage: row('a') },
      { eventName: 'MODIFY', sequenceNumber: '101', newImage: row('a') },
      { eventName: 'INSERT', sequenceNumber: '102', newImage: row('b') },
    ];
    expect(outboxEventsFrom(records).map((o) => [o.event.job, o.sequenceNumber])).toEqual([
      ['a', '100'],
      ['b', '102'],
    ]);
  });
});
