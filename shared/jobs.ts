/**
 * The jobs. Teams add a job here: a name, a schedule, a registered handler and any policy
 * that differs from the defaults (see README "Adding a job"). Validated at synth, at cold start
 * and by the tests; an invalid job names itself and the field at fault. The example jobs live in
 * shared/example-jobs.ts and are deployed only with `-c exampleJobs=true`.
 */
import type { Calendars, JobInput } from './schedule/job-schema.js';

/**
 * Named lists of local dates (`2026-12-25`) that jobs skip with `exclude: [{ calendar: name }]`;
 * each date is read in the excluding job's own time zone. See README "Exclusions".
 */
export const calendars: Calendars = {};

export const jobDefinitions: readonly JobInput[] = [
  // { name: 'nightly-report', schedule: '30 2 * * *', timezone: 'Europe/London', handler: 'nightly-report' },
];
