/** The validated job config: definitions from jobs.ts checked against the handler registry and the calendars. */
import { parseJobs, type Job } from './core/job-schema.js';
import { handlers } from './handlers/index.js';
import { calendars, jobDefinitions } from './jobs.js';
import { ENV } from './resources.js';

let cached: readonly Job[] | undefined;

/** Options of the deployment the jobs are validated for. */
export interface LoadJobsOptions {
  /** The worker Lambda's timeout (ms) every attempt must fit in. @default from the environment, else 60 s */
  readonly workerTimeoutMs?: number;
}

/** The worker timeout the deployment set (env WORKER_TIMEOUT_SECONDS), if any. */
export function workerTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[ENV.workerTimeoutSeconds];
  const seconds = raw === undefined || raw === '' ? NaN : Number(raw);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

/** Parses once per process (cold start); throws JobConfigError naming job and field. */
export function loadJobs(definitions: readonly unknown[] = jobDefinitions, options: LoadJobsOptions = {}): readonly Job[] {
  const defaultInput = definitions === jobDefinitions && options.workerTimeoutMs === undefined;
  if (defaultInput && cached) return cached;
  const jobs = parseJobs(definitions, { handlers: Object.keys(handlers), calendars, workerTimeoutMs: options.workerTimeoutMs ?? workerTimeoutFromEnv() });
  if (defaultInput) cached = jobs;
  return jobs;
}

export { jobsByName } from './worker-config.js';
