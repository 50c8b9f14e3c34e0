/**
 * Constants the ops CLI shares with the local runtime. `LOCAL_ENDPOINTS_FILE` repeats the value
 * exported by tools/local.ts, which cannot be imported (importing it starts the runtime).
 */
export const LOCAL_ENDPOINTS_FILE = '.local-data/endpoints.json';
