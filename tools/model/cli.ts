/**
 * `npm run chaos -- --model …`: the model-based tester's command line (see tools/chaos.ts).
 * Starts one local stack, runs the scenarios (or, with --prove, the per-defect proof), prints
 * every failure as a replayable seed, path and story, and ends with one JSON line. Exit 0 only
 * with 0 violations (for --prove: only when every defect class was found).
 */
import { parseArgs } from 'node:util';
import { startLocalStack } from '../local-stack.js';
import { warmUp } from '../chaos/sandbox.js';
import { proveDefects, formatProof } from './prove.js';
import { formatFailure, runModel } from './runner.js';
import { modelStack } from './world.js';

function int(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`--${name} must be a non-negative integer, got "${raw}"`);
    process.exit(2);
  }
  return value;
}

export async function modelMain(args: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenarios: { type: 'string' },
      seed: { type: 'string' },
      path: { type: 'string' },
      concurrency: { type: 'string' },
      'max-commands': { type: 'string' },
      prove: { type: 'boolean', default: false },
      defects: { type: 'string' },
      quiet: { type: 'boolean', default: false },
    },
  });
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', values.seed, 0);
  const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
  const stack = await startLocalStack({});
  await warmUp(stack);
  const model = modelStack(stack);
  const stop = () => void stack.stop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  try {
    if (values.prove) {
      const defects = values.defects?.split(',').map((d) => Number(d.trim()));
      const proof = await proveDefects(model, { seed, scenarios: int('scenarios', values.scenarios, 400), defects, concurrency: int('concurrency', values.concurrency, 4), log });
      console.log(formatProof(proof));
      console.log(JSON.stringify({ defects: proof.map((p) => ({ defect: p.defect, found: p.found, scenarios: p.scenariosToFailure, shrunk: p.shrunkLength })), seed }));
      return proof.every((p) => p.found) ? 0 : 1;
    }
    log?.(`model: ${values.scenarios ?? 5000} scenario(s), seed ${seed}`);
    const summary = await runModel(model, {
      scenarios: int('scenarios', values.scenarios, 5_000),
      seed,
      path: values.path,
      concurrency: int('concurrency', values.concurrency, 4),
      maxCommands: int('max-commands', values['max-commands'], 40),
      log,
    });
    for (const failure of summary.failures) console.log(`${formatFailure(failure)}\n`);
    log?.(`${summary.scenarios} scenario(s) in ${Math.round(summary.durationMs / 1000)} s`);
    console.log(JSON.stringify({ scenarios: summary.scenarios, operations: summary.operations, faults: summary.faults, violations: summary.violations, seed }));
    return summary.violations === 0 ? 0 : 1;
  } finally {
    process.off('SIGINT', stop);
    model.clients.dynamo.destroy();
    model.clients.sqs.destroy();
    await stack.stop();
  }
}
