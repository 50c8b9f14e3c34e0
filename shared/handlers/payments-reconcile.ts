/**
 * Example job: walk a cursor over PROCESSING payments and settle each under a status condition.
 *
 * Each step is one fenced transaction: the payment moves PROCESSING → SETTLED (business
 * condition), the job's cursor advances (fence) and a PaymentSettled outbox row is written for the
 * relay to publish. A stale worker's step is refused whole, so a payment is never settled twice,
 * the cursor never moves backwards and no event is published for a write that did not land.
 */
import { ConditionFailedError, type JobHandler } from '../handler-api.js';
import { outboxPut } from '../core/outbox.js';

export const PAYMENTS_PK = 'PAYMENTS';
export const CURSOR_KEY = { pk: 'JOB#payments-reconcile', sk: 'CURSOR' } as const;
/** Payments settled per run: small steps keep each run well inside one lease. */
const STEP = 5;

export const paymentsReconcile: JobHandler = {
  async run(ctx) {
    const cursor = await ctx.reader.get(ctx.tables.ledger, CURSOR_KEY);
    const after = typeof cursor?.position === 'string' ? cursor.position : undefined;
    let page = await ctx.reader.query(ctx.tables.payments, PAYMENTS_PK, { after, limit: STEP });
    // Wrap around: new PROCESSING payments may have appeared behind the cursor.
    if (page.length === 0 && after !== undefined) page = await ctx.reader.query(ctx.tables.payments, PAYMENTS_PK, { limit: STEP });
    const settled: string[] = [];
    for (const payment of page) {
      if (ctx.signal.aborted) break;
      const id = payment.sk as string;
      const moveCursor = {
        kind: 'put' as const,
        table: ctx.tables.ledger,
        item: { ...CURSOR_KEY, position: id, runKey: ctx.runKey },
      };
      if (payment.status !== 'PROCESSING') {
        await ctx.fenced.put(moveCursor);
        continue;
      }
      try {
        await ctx.fenced.transact([
          {
            kind: 'update',
            table: ctx.tables.payments,
            key: { pk: PAYMENTS_PK, sk: id },
            set: {
              expression: '#status = :settled, settledBy = :runKey',
              names: { '#status': 'status' },
              values: { ':settled': 'SETTLED', ':runKey': ctx.runKey },
            },
            condition: { expression: '#status = :processing', names: { '#status': 'status' }, values: { ':processing': 'PROCESSING' } },
          },
          moveCursor,
          outboxPut(ctx, { name: id, detailType: 'PaymentSettled', detail: { paymentId: id, amountCents: payment.amountCents } }),
        ]);
        settled.push(id);
      } catch (error) {
        // Settled meanwhile by someone else (the condition did its job): just move on.
        if (!(error instanceof ConditionFailedError)) throw error;
        await ctx.fenced.put(moveCursor);
      }
    }
    ctx.logger.info('payments settled', { settled: settled.length });
    return { evidence: { settled } };
  },
};
