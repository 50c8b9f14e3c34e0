/**
 * The short run of the model-based tester inside `npm test`: generated scenarios (jobs with every
 * policy combination, planner ticks, worker lanes that die, pause or run skewed, ops actions,
 * config changes, faults at every SDK boundary) against the shared local stack, checked for
 * safety and, after quiescence, liveness. One fixed seed (printed, so a failure replays with
 * `npm run chaos -- --model --seed S --path P`).
 */
import { describe, expect, it } from 'vitest';
import { formatFailure, runModel } from '../../tools/model/runner.js';
import { modelStack } from '../../tools/model/world.js';
import { sharedEndpoints } from '../support/stack.js';

const SCENARIOS = 16;

async function run(seed: number) {
  const stack = modelStack(sharedEndpoints());
  try {
    // A failure is reported after a short shrink: its seed and path replay it for a longer one.
    // The full command mix: the swarm mix's scenarios (backfills of hours, a hundred jobs, outages
    // of hours, more often) took over 600 s a seed in the suite beside a proof search; the long
    // runs and the proof draw the swarm mix (docs/testing.md).
    const summary = await runModel(stack, {
      scenarios: SCENARIOS,
      seed,
      concurrency: 2,
      maxCommands: 30,
      shrinkBudget: 20,
      shrinkTimeMs: 120_000,
      commandMix: 'full',
    });
    const report = summary.failures.map(formatFailure).join('\n\n');
    console.log(
      JSON.stringify({
        scenarios: summary.scenarios,
        operations: summary.operations,
        faults: summary.faults,
        violations: summary.violations,
        seed,
      }),
    );
    return { summary, report };
  } finally {
    stack.clients.dynamo.destroy();
    stack.clients.sqs.destroy();
  }
}

describe('model-based tester (short run)', () => {
  // One seed in the suite: a second one doubled the file's time (584 s in CI) for scenarios the
  // long run (`npm run chaos -- --model --minutes 25`) draws by the thousand. MODEL_SEED=N replays
  // a seed, MODEL_SEED=random draws one (printed).
  it('generated scenarios keep every safety and liveness invariant (seed printed)', async () => {
    const wanted = process.env.MODEL_SEED;
    const seed = wanted === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(wanted ?? 20261130);
    console.log(`model short run: seed ${seed}`);
    const { summary, report } = await run(seed);
    expect(summary.scenarios).toBeGreaterThanOrEqual(SCENARIOS);
    expect(summary.violations, `seed ${seed}\n${report}`).toBe(0);
  }, 900_000);
});
