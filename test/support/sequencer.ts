/**
 * The suite's file order: the files known to run for minutes go first, longest first, so that the
 * two workers finish together instead of one of them running a long file alone at the end. On a
 * clean clone (CI) vitest has no durations cached and orders by file size, which put the smallest
 * files, among them the longest runs (the model's short run, the benchmark's smoke mode, the
 * chaos drills), last.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Measured in CI, longest first (seconds beside the rest of the suite on 2 cores). */
export const LONG_FILES: readonly string[] = [
  'test/integration/bench-smoke.test.ts', // ~400 s
  'test/model/model-short.test.ts', // ~160 s
  'test/chaos/chaos-short.test.ts', // ~120 s
  'test/integration/local-start-crash.test.ts', // ~90 s (npm start as a child, killed)
  'test/integration/local-start-signals.test.ts', // ~75 s
  'test/integration/console-browser.test.ts', // ~50 s (Chromium)
  'test/infra/scheduler-stack.test.ts', // ~45 s (CDK synths)
  'test/integration/drill-worker-paused.test.ts',
  'test/integration/drill-failing-job.test.ts',
  'test/integration/drill-ledger-unreachable.test.ts',
  'test/integration/drill-put-dropped.test.ts',
  'test/integration/drill-worker-killed.test.ts',
];

function rank(spec: TestSpecification): number {
  const path = spec.moduleId.replaceAll('\\', '/');
  const i = LONG_FILES.findIndex((file) => path.endsWith(`/${file}`));
  return i === -1 ? LONG_FILES.length : i;
}

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: the rest keep vitest's own order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
