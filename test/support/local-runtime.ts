/**
 * `npm start`'s runtime in process for the tests: a fresh sandbox and a LocalRuntime started on its
 * endpoints, the test's jobs, handlers and line listeners given as they are.
 */
import { LocalRuntime, type LocalRuntimeOptions } from '../../tools/local-runtime.js';
import { sandbox, type Sandbox } from './stack.js';

/** A sandbox and a LocalRuntime on it (`options`, all but the endpoints), already started. */
export async function startedRuntime(options: Omit<LocalRuntimeOptions, 'endpoints'>): Promise<{ box: Sandbox; runtime: LocalRuntime }> {
  const box = await sandbox();
  const runtime = new LocalRuntime({ endpoints: box.endpoints, ...options });
  runtime.start();
  return { box, runtime };
}
