/**
 * `npm run bench`: the scheduler's performance figures in one run on the embedded local
 * stack. Prints a human table; with `--json` the last line is one JSON object with every figure.
 *
 *   npm run bench                 full mode (every phase on fresh stacks; about 9 minutes on 2 CPUs)
 *   npm run bench -- --smoke      tiny sizes (< 60 s); `npm test` runs it in-process
 *   npm run bench -- --json       also print the figures as one JSON line (last line)
 *   npm run bench -- --phases end-to-end,takeover  only these phases (the others report n/a)
 *   npm run bench -- --phases end-to-end --cpu-profile FILE   profile the burst's Node CPU (FILE: the raw .cpuprofile)
 *
 * Phases: bundle, planner, planner-cost, end-to-end, overlap, trigger-lag, takeover, console (the
 * raw limit is measured inside planner and end-to-end, on their own tables, before and after them;
 * console times the console's Jobs and Job pages on a seeded ledger: tools/bench/console-pages.ts).
 * Code: tools/bench/ (run.ts orchestrates; one file per phase). Results: docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { stopAllStacks } from './bench/measure.js';
import { ALL_PHASES, runBench, type Phase } from './bench/run.js';

export { runBench } from './bench/run.js';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    phases: { type: 'string' },
    quiet: { type: 'boolean', default: false },
    'cpu-profile': { type: 'string' },
  },
});

const phases = values.phases?.split(',').map((p) => p.trim()) as Phase[] | undefined;
const unknown = phases?.filter((p) => !ALL_PHASES.includes(p));
if (unknown?.length) {
  console.error(`unknown phase(s): ${unknown.join(', ')}; phases: ${ALL_PHASES.join(', ')}`);
  process.exit(2);
}

// An interrupted bench must not leave DynamoDB Local JVMs behind.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`[bench] ${signal}: stopping the local stacks\n`);
    void stopAllStacks().finally(() => process.exit(130));
  });
}

const result = await runBench({
  mode: values.smoke ? 'smoke' : 'full',
  phases,
  cpuProfile: values['cpu-profile'],
  log: values.quiet ? undefined : (line) => process.stderr.write(`[bench] ${line}\n`),
});
console.log(result.table);
if (values.json) console.log(JSON.stringify(result.figures));
