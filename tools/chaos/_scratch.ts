import { startLocalStack } from '../local-stack.js';
import { selectDrills } from './run.js';
const stack = await startLocalStack();
const [runs, which, seed, children] = [Number(process.argv[2] ?? 100), process.argv[3] ?? 'd', Number(process.argv[4] ?? 1), Number(process.argv[5] ?? 1)];
const t0 = Date.now();
try {
  const [entry] = selectDrills([which]);
  const r = await entry!.drill({ base: stack, runs, seed, childIterations: children, log: (l) => console.log(l) });
  console.log(JSON.stringify({ ...r, violations: r.violations.slice(0, 5) }, null, 1));
} finally { await stack.stop(); }
console.log('ms', Date.now() - t0);
