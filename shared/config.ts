/**
 * The validated job config: the definitions of this deployment (shared/jobs.ts, plus
 * shared/example-jobs.ts when EXAMPLE_JOBS=true) checked against the handler registry, the
 * calendars and the worker's time limit.
 */
import { parseJobs, type Job } from './schedule/job-schema.js';
import { handlers } from './handlers/index.js';
import { calendars } from './jobs.js';
import { configuredJobDefinitions, workerTimeoutFromEnv } from './worker/config.js';

const cached = new WeakMap<readonly unknown[], readonly Job[]>();

/** Options of the deployment the jobs are validated for. */
export interface LoadJobsOptions {
  /** The worker Lambda's timeout (ms) every attempt must fit in. @default from the environment, else 60 s */
  readonly workerTimeoutMs?: number;
}

/**
 * Parses once per process and definitions (cold start); throws JobConfigError naming job and
 * field. Without arguments: this deployment's definitions, from the environment.
 */
export function loadJobs(definitions: readonly unknown[] = configuredJobDefinitions(), options: LoadJobsOptions = {}): readonly Job[] {
  const cacheable = options.workerTimeoutMs === undefined;
  const known = cacheable ? cached.get(definitions) : undefined;
  if (known) return known;
  const jobs = parseJobs(definitions, {
    handlers: Object.keys(handlers),
    calendars,
    workerTimeoutMs: options.workerTimeoutMs ?? workerTimeoutFromEnv(),
  });
  if (cacheable) cached.set(definitions, jobs);
  return jobs;
}

export { configuredJobDefinitions, exampleJobsEnabled, jobsByName, workerTimeoutFromEnv } from './worker/config.js';
