/** The handler registry: a job's `handler` field names one of these. */
import type { JobHandler } from '../handler-api.js';
import { cacheRefresh } from './cache-refresh.js';
import { paymentsReconcile } from './payments-reconcile.js';

export const handlers: Readonly<Record<string, JobHandler>> = {
  'payments-reconcile': paymentsReconcile,
  'cache-refresh': cacheRefresh,
};
