import { startLocalStack } from '../local-stack.js';
import { World } from './world.js';
const stack = await startLocalStack();
try {
  let t = Date.now();
  const world = await World.create(stack, {});
  console.log('create world', Date.now() - t);
  world.setJobs([0,1,2,3].map(i => ({ name: `j${i}`, schedule: '*/10 * * * * *', handler: 'charge', startLead: '15m' })));
  let now = Date.UTC(2031, 0, 1) + 123;
  const clock = () => now;
  const lanes = [0, 1, 2].map((i) => world.workerDeps({ owner: `w${i}`, clock, handlerConfig: { seed: 1, workMs: [0, 0] } }));
  for (let k = 0; k < 3; k++) {
    t = Date.now(); const r = await world.tick(clock, { lookaheadMs: 60_000 }); console.log('tick', Date.now() - t, r.created);
    now += 61_000;
    t = Date.now(); const n = await world.drain(lanes); console.log('drain', Date.now() - t, n);
  }
  t = Date.now(); await world.destroy(); console.log('destroy', Date.now() - t);
} finally { await stack.stop(); }
