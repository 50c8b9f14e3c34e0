/**
 * A worker as a real child process, for drills and the benchmark that kill (SIGKILL) or pause
 * (SIGSTOP/SIGCONT) it. It polls the run queue like the event source mapping and writes every
 * history event as one JSON line on stdout, so the parent can check invariants across processes.
 *
 *   tsx tools/worker-process.ts --endpoints FILE --owner NAME [--handlers MODULE] [--jobs FILE]
 *       [--batch-size N] [--poll-wait S] [--clock-skew MS]
 *
 * --handlers: a module exporting `handlers` (default: shared/handlers/index.ts).
 * --jobs: a JSON file with job definitions (default: shared/jobs.ts and the example jobs).
 */
import './quiet-sdk.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { configuredJobDefinitions, jobsByName, loadJobs } from '../shared/config.js';
import { parseJobs } from '../shared/schedule/job-schema.js';
import type { JobHandler } from '../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../shared/runtime/observability.js';
import { createAdapters, createClients } from '../shared/runtime/clients.js';
import { processBatch } from '../shared/worker/batch.js';
import { localClientConfig, type LocalEndpoints } from './local-stack.js';
import { LocalPoller } from './local-poller.js';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string' },
    owner: { type: 'string' },
    handlers: { type: 'string' },
    jobs: { type: 'string' },
    'batch-size': { type: 'string' },
    'poll-wait': { type: 'string' },
    'clock-skew': { type: 'string' },
  },
});
if (!values.endpoints || !values.owner) {
  console.error('usage: worker-process --endpoints FILE --owner NAME [--handlers MODULE] [--jobs FILE]');
  process.exit(2);
}
const endpoints = JSON.parse(readFileSync(values.endpoints, 'utf8')) as LocalEndpoints;
const handlerModule = values.handlers
  ? ((await import(pathToFileURL(resolve(values.handlers)).href)) as { handlers: Record<string, JobHandler> })
  : await import('../shared/handlers/index.js');
const handlers = handlerModule.handlers;
const jobs = values.jobs
  ? // A local child has no Lambda time limit: the drills' jobs need not fit one invocation.
    parseJobs(JSON.parse(readFileSync(values.jobs, 'utf8')) as unknown[], {
      handlers: Object.keys(handlers),
      workerTimeoutMs: Number.POSITIVE_INFINITY,
    })
  : loadJobs(configuredJobDefinitions({ exampleJobs: true }));
const clients = createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) });
const { ledger, queue } = createAdapters(clients, {
  ledgerTable: endpoints.ledgerTable,
  paymentsTable: endpoints.paymentsTable,
  runQueueUrl: endpoints.runQueueUrl,
  retentionDays: 30,
});
const out = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const metrics = new InMemoryMetrics();
const owner = values.owner;
const poller = new LocalPoller(
  clients.sqs,
  (records) =>
    processBatch(
      {
        ledger,
        queue,
        doc: clients.doc,
        jobs: jobsByName(jobs),
        handlers,
        tables: { ledger: endpoints.ledgerTable, payments: endpoints.paymentsTable },
        owner,
        clock: Date.now,
        logger: new JsonLineLogger((line) => process.stderr.write(`${line}\n`), { owner }, 'warn'),
        metrics,
        history: { record: (event) => out({ event }) },
        options: values['clock-skew'] ? { clockSkewMs: Number(values['clock-skew']) } : undefined,
      },
      records,
    ),
  { queueUrl: endpoints.runQueueUrl, batchSize: Number(values['batch-size'] ?? 10), waitTimeSeconds: Number(values['poll-wait'] ?? 0) },
  (error) => process.stderr.write(`${JSON.stringify({ level: 'error', owner, message: 'poller error', error: String(error) })}\n`),
);
poller.start();
out({ ready: owner, pid: process.pid });
const stop = () => {
  out({ metrics: Object.fromEntries(metrics.counters) });
  void poller.stop().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
