/**
 * The drill handlers for a worker child process (`tools/worker-process.ts --handlers` this file).
 * Config comes from CHAOS_HANDLER_CONFIG (JSON); history events and drill notes go to stdout as
 * JSON lines, next to the worker's own `{"event": ...}` lines, for the parent drill to merge.
 */
import type { HandlerConfig } from './handlers.js';
import { makeHandlers } from './handlers.js';

const config = JSON.parse(process.env.CHAOS_HANDLER_CONFIG ?? '{"seed":1}') as HandlerConfig;
const line = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);

export const handlers = makeHandlers(config, {
  record: (event) => line({ event }),
  note: (note) => line({ drill: note }),
});
