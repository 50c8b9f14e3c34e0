/**
 * The jobs. Teams add a job here: a name, a schedule, a registered handler and any policy
 * that differs from the defaults (see README "Adding a job"). Validated at synth, at cold start
 * and by the tests; an invalid job names itself and the field at fault.
 */
import type { Calendars, JobInput } from './core/job-schema.js';

/**
 * Named lists of local dates (`2026-12-25`) that jobs skip with `exclude: [{ calendar: name }]`;
 * each date is read in the excluding job's own time zone. See README "Exclusions".
 */
export const calendars: Calendars = {};

export const jobDefinitions: readonly JobInput[] = [
  {
    name: 'payments-reconcile',
    schedule: '* * * * *',
    handler: 'payments-reconcile',
    lease: '30s',
    retry: { maxAttempts: 5 },
  },
  {
    name: 'cache-refresh',
    schedule: '*/10 * * * * *',
    handler: 'cache-refresh',
    lease: '15s',
    misfire: { policy: 'latest' },
  },
];
