/** Worker Lambda: SQS event source with ReportBatchItemFailures. Wiring only. */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { jobsByName, loadWorkerJobs } from '../shared/worker/config.js';
import { handlers } from '../shared/handlers/index.js';
import { powertoolsLogger, PowertoolsMetricsSink } from '../shared/runtime/powertools.js';
import { createAdapters, createClients, resourcesFromEnv } from '../shared/runtime/clients.js';
import { processBatch } from '../shared/worker/batch.js';

const jobs = jobsByName(loadWorkerJobs());
const clients = createClients();
const resources = resourcesFromEnv();
const { ledger, queue } = createAdapters(clients, resources);
const logger = powertoolsLogger();
const metrics = new PowertoolsMetricsSink();

export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  try {
    return await processBatch(
      {
        ledger,
        queue,
        doc: clients.doc,
        jobs,
        handlers,
        tables: { ledger: resources.ledgerTable, payments: resources.paymentsTable },
        outboxRetentionDays: resources.outboxRetentionDays,
        // One owner per invocation: a retried invocation must not inherit a lease it never held.
        owner: `${context.awsRequestId ?? randomUUID()}`,
        clock: Date.now,
        logger,
        metrics,
        remainingTimeMs: () => context.getRemainingTimeInMillis(),
      },
      event.Records,
    );
  } finally {
    metrics.publish();
  }
}
