import { startLocalStack } from '../local-stack.js';
import { putDroppedDrill } from './drills/put-dropped.js';
import { plannerDownDrill } from './drills/planner-down.js';
import { failingJobDrill } from './drills/failing-job.js';
import { workerKilledDrill } from './drills/worker-killed.js';
import { workerPausedDrill } from './drills/worker-paused.js';
import { ledgerUnreachableDrill } from './drills/ledger-unreachable.js';
const drills = { a: putDroppedDrill, e: plannerDownDrill, f: failingJobDrill, b: workerKilledDrill, c: workerPausedDrill, d: ledgerUnreachableDrill } as Record<string, typeof putDroppedDrill>;
const stack = await startLocalStack();
const t0 = Date.now();
try {
  const r = await drills[process.argv[3] ?? 'a']!({ base: stack, runs: Number(process.argv[2] ?? 300), seed: 7, log: (l) => console.log(l) });
  console.log(JSON.stringify({ ...r, violations: r.violations.slice(0, 5) }, null, 1));
} finally { await stack.stop(); }
console.log('ms', Date.now() - t0);
