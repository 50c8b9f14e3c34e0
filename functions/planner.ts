/** Planner Lambda: EventBridge invokes it every minute with `{ partition, of }`. Wiring only. */
import { DeployedConfigStore } from '../shared/store/deployed-config.js';
import { loadJobs } from '../shared/config.js';
import { ConfigRecorder } from '../shared/planner/config-record.js';
import { partitionRefError, type PartitionRef } from '../shared/core/partition.js';
import { runPlannerTick, type TickReport } from '../shared/planner/planner.js';
import { powertoolsLogger, PowertoolsMetricsSink } from '../shared/runtime/powertools.js';
import { createAdapters, createClients, resourcesFromEnv } from '../shared/runtime/clients.js';

const jobs = loadJobs();
const clients = createClients();
const { ledger, queue } = createAdapters(clients, resourcesFromEnv());
const logger = powertoolsLogger();
const metrics = new PowertoolsMetricsSink();
// What this cold start runs, recorded for the ops CLI (once; a failure is retried next tick).
const configRecorder = new ConfigRecorder(DeployedConfigStore.of(ledger), jobs, logger);

export async function handler(event: Partial<PartitionRef> | undefined): Promise<TickReport> {
  const ref = { partition: event?.partition ?? 0, of: event?.of ?? 1 };
  const problem = partitionRefError(ref);
  if (problem) throw new Error(`invalid planner input: ${problem}`);
  try {
    await configRecorder.ensureRecorded(Date.now());
    const report = await runPlannerTick({ ledger, queue, jobs, clock: Date.now, logger, metrics }, ref);
    metrics.plannerTick(ref.partition);
    return report;
  } finally {
    metrics.publish();
  }
}
