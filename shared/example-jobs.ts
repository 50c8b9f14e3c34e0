/**
 * The example jobs: a fenced cache refresh every 10 seconds and a payments reconciliation every
 * minute (with its own payments table). They show the handler API at work and are what `npm start`
 * runs; a deployment gets them only when asked for (`-c exampleJobs=true`), so a team's first
 * deploy runs its own jobs and nothing else.
 */
import type { JobInput } from './schedule/job-schema.js';

export const exampleJobDefinitions: readonly JobInput[] = [
  {
    name: 'payments-reconcile',
    schedule: '* * * * *',
    handler: 'payments-reconcile',
    lease: '30s',
    retry: { maxAttempts: 5 },
    // Its fenced cursor is one item every run moves: a newer slot's fence refuses an older slot's move.
    effects: 'latest-wins',
  },
  {
    name: 'cache-refresh',
    schedule: '*/10 * * * * *',
    handler: 'cache-refresh',
    lease: '15s',
    misfire: { policy: 'latest' },
    // Every run overwrites the one cached value under its fence: only the newest slot's write lands.
    effects: 'latest-wins',
  },
];
