/**
 * The job config as the worker loads it at cold start: the same definitions and handler registry
 * as shared/config.ts, with every field validated except the cron grammar and the checks that read
 * the fields together in the zone (checked at synth and by the planner), so the worker bundle
 * carries neither the cron parser nor the slot engine.
 *
 * Which definitions: the team's (shared/jobs.ts), plus the example jobs when the environment says
 * so (EXAMPLE_JOBS=true, set by the stack from `-c exampleJobs` and by the local runtime). The
 * planner and the worker read the same variable, so they always agree on the job set.
 */
import { createJobParser, WORKER_SCHEDULE_CHECKS, type Job, type JobInput } from '../schedule/job-schema-core.js';
import { exampleJobDefinitions } from '../example-jobs.js';
import { handlers } from '../handlers/index.js';
import { calendars, jobDefinitions } from '../jobs.js';
import { ENV } from '../core/resources.js';

/** One array per choice, so a loaded config can be cached by the identity of its definitions. */
const WITH_EXAMPLES: readonly JobInput[] = [...jobDefinitions, ...exampleJobDefinitions];

/** Whether the example jobs are on: EXAMPLE_JOBS is "true", "false" or unset (off). */
export function exampleJobsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const raw = env[ENV.exampleJobs];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new Error(`environment variable ${ENV.exampleJobs} must be "true" or "false", got ${JSON.stringify(raw)}`);
}

/** The job definitions of this deployment; `exampleJobs` defaults to the environment's choice. */
export function configuredJobDefinitions(options: { readonly exampleJobs?: boolean } = {}): readonly JobInput[] {
  return (options.exampleJobs ?? exampleJobsEnabled()) ? WITH_EXAMPLES : jobDefinitions;
}

/** The worker timeout the deployment set (env WORKER_TIMEOUT_SECONDS), if any. */
export function workerTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[ENV.workerTimeoutSeconds];
  const seconds = raw === undefined || raw === '' ? NaN : Number(raw);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

export function loadWorkerJobs(
  definitions: readonly unknown[] = configuredJobDefinitions(),
  env: NodeJS.ProcessEnv = process.env,
): readonly Job[] {
  return createJobParser(WORKER_SCHEDULE_CHECKS)(definitions, {
    handlers: Object.keys(handlers),
    calendars,
    workerTimeoutMs: workerTimeoutFromEnv(env),
  });
}

export function jobsByName(jobs: readonly Job[]): ReadonlyMap<string, Job> {
  return new Map(jobs.map((job) => [job.name, job]));
}
