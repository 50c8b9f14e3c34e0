/**
 * The job config as the worker loads it at cold start: the same definitions and handler registry
 * as shared/config.ts, with every field validated except the cron grammar and the checks that read
 * the fields together in the zone (checked at synth and by the planner), so the worker bundle
 * carries neither the cron parser nor the slot engine.
 */
import { createJobParser, WORKER_SCHEDULE_CHECKS, type Job } from './core/job-schema-core.js';
import { handlers } from './handlers/index.js';
import { calendars, jobDefinitions } from './jobs.js';
import { ENV } from './resources.js';

export function loadWorkerJobs(definitions: readonly unknown[] = jobDefinitions, env: NodeJS.ProcessEnv = process.env): readonly Job[] {
  const seconds = Number(env[ENV.workerTimeoutSeconds] ?? '');
  return createJobParser(WORKER_SCHEDULE_CHECKS)(definitions, {
    handlers: Object.keys(handlers),
    calendars,
    workerTimeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined,
  });
}

export function jobsByName(jobs: readonly Job[]): ReadonlyMap<string, Job> {
  return new Map(jobs.map((job) => [job.name, job]));
}
