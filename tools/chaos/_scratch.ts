import { startLocalStack } from '../local-stack.js';
import { putDroppedDrill } from './drills/put-dropped.js';
const stack = await startLocalStack();
const t0 = Date.now();
try {
  const r = await putDroppedDrill({ base: stack, runs: Number(process.argv[2] ?? 300), seed: 7, log: (l) => console.log(l) });
  console.log(JSON.stringify({ ...r, violations: r.violations.slice(0, 5) }, null, 1));
} finally { await stack.stop(); }
console.log('ms', Date.now() - t0);
