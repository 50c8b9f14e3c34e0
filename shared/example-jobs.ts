/**
 * The example jobs: a fenced cache refresh every 10 seconds and a payments reconciliation every
 * minute (with its own payments table). They show the handler API at work and are what `npm start`
 * runs; a deployment gets them only when asked for (`-c exampleJobs=true`), so a team's first
 * deploy runs its own jobs and nothing else.
 */
import type { JobInput } from './core/job-schema.js';

export const exampleJobDefinitions: readonly JobInput[] = [
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
