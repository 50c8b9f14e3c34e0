/** The validated job config: definitions from jobs.ts checked against the handler registry and the calendars. */
import { parseJobs, type Job } from './core/job-schema.js';
import { handlers } from './handlers/index.js';
import { calendars, jobDefinitions } from './jobs.js';

let cached: readonly Job[] | undefined;

/** Parses once per process (cold start); throws JobConfigError naming job and field. */
export function loadJobs(definitions: readonly unknown[] = jobDefinitions): readonly Job[] {
  if (definitions === jobDefinitions && cached) return cached;
  const jobs = parseJobs(definitions, { handlers: Object.keys(handlers), calendars });
  if (definitions === jobDefinitions) cached = jobs;
  return jobs;
}

export { jobsByName } from './worker-config.js';
