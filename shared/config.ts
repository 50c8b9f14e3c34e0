/**
 * The validated job config: the definitions of this deployment (shared/jobs.ts, plus
 * shared/example-jobs.ts when EXAMPLE_JOBS=true) checked against the handler registry.
 */
import { parseJobs, type Job } from './core/job-schema.js';
import { handlers } from './handlers/index.js';
import { configuredJobDefinitions } from './worker-config.js';

const cached = new WeakMap<readonly unknown[], readonly Job[]>();

/**
 * Parses once per process and definitions (cold start); throws JobConfigError naming job and
 * field. Without arguments: this deployment's definitions, from the environment.
 */
export function loadJobs(definitions: readonly unknown[] = configuredJobDefinitions()): readonly Job[] {
  const known = cached.get(definitions);
  if (known) return known;
  const jobs = parseJobs(definitions, { handlers: Object.keys(handlers) });
  cached.set(definitions, jobs);
  return jobs;
}

export { configuredJobDefinitions, exampleJobsEnabled, jobsByName } from './worker-config.js';
