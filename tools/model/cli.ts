/**
 * `npm run chaos -- --model …`: the model-based tester's command line (see tools/chaos.ts).
 * Starts one local stack, runs the scenarios (or, with --prove, the per-defect proof), prints
 * every failure as a replayable seed, path and story, and ends with one JSON line. Exit 0 only
 * with 0 violations (for --prove: only when every defect class was found).
 *
 *   --scenarios N --seed S --concurrency C --max-commands M   the run
 *   --minutes T                                               start no scenario after T minutes
 *   --seed S --path P                                         replay one (shrunk) failure
 *   --counts inv1,inv2                                        only these invariants fail a scenario
 *   --prove [--defects 1,2] [--scenarios N]                   per-defect proof (prove.ts)
 *   --directed N [--counts …]                                 one directed scenario (directed.ts)
 *   --fault-profiles mixed|swarm|kinds                        which fault profiles scenarios draw (default kinds; npm test: swarm)
 *   --job-mix full|swarm                                      every job trait, or a random half of the handler behaviours per scenario (default swarm; npm test: full)
 *   --command-mix full|swarm                                  every command kind, or a random half per scenario (default swarm)
 */
import { parseArgs } from 'node:util';
import { startLocalStack } from '../local-stack.js';
import { warmUp } from '../chaos/sandbox.js';
import { FIRST_FAILURE_PREFIX, formatProof, proveDefects, type FirstFailure } from './prove.js';
import { formatFailure, MAX_COMMANDS, runModel } from './runner.js';
import { DIRECTED, runDirected } from './directed.js';
import { modelStack } from './world.js';
import { COMMAND_MIXES, FAULT_PROFILES, JOB_MIXES, type CommandMix, type FaultProfiles, type JobMix } from './commands.js';

function int(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`--${name} must be a non-negative integer, got "${raw}"`);
    process.exit(2);
  }
  return value;
}

/** An option that takes one of a few names: the name given, or `fallback` when none; else exit 2 naming the choices. */
function choiceOf<T extends string>(option: string, raw: string | undefined, choices: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  const known = choices.find((c) => c === raw);
  if (known) return known;
  console.error(`--${option} must be one of ${choices.map((c) => `"${c}"`).join(', ')}, got "${raw}"`);
  process.exit(2);
}

// The CLI's long runs and proofs draw the widest generator: every swarm (npm test's short run keeps
// the runner's defaults, whose fixed seeds draw the scenarios they always drew).
const faultProfilesOf = (raw: string | undefined): FaultProfiles => choiceOf('fault-profiles', raw, FAULT_PROFILES, 'kinds');
const jobMixOf = (raw: string | undefined): JobMix => choiceOf('job-mix', raw, JOB_MIXES, 'swarm');
const commandMixOf = (raw: string | undefined): CommandMix => choiceOf('command-mix', raw, COMMAND_MIXES, 'swarm');

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
      counts: { type: 'string' },
      'shrink-budget': { type: 'string' },
      'fault-profiles': { type: 'string' },
      'command-mix': { type: 'string' },
      'job-mix': { type: 'string' },
      minutes: { type: 'string' },
      quiet: { type: 'boolean', default: false },
      directed: { type: 'string' },
    },
  });
  // Checked before anything starts: a misspelt option ends the command at once.
  const generator = {
    faultProfiles: faultProfilesOf(values['fault-profiles']),
    jobMix: jobMixOf(values['job-mix']),
    commandMix: commandMixOf(values['command-mix']),
  };
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', values.seed, 0);
  const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
  if (values.prove) {
    // Each defect runs in its own scratch worktree and process, on its own local stack.
    const defects = values.defects?.split(',').map((d) => int('defects', d.trim(), 0));
    const proof = await proveDefects({
      seed,
      scenarios: int('scenarios', values.scenarios, 300),
      defects,
      concurrency: int('concurrency', values.concurrency, 4),
      maxCommands: values['max-commands'] === undefined ? undefined : int('max-commands', values['max-commands'], 60),
      shrinkBudget: values['shrink-budget'] === undefined ? undefined : int('shrink-budget', values['shrink-budget'], 60),
      ...generator,
      log,
    });
    console.log(formatProof(proof));
    console.log(
      JSON.stringify({
        defects: proof.map((p) => ({
          defect: p.defect,
          directed: p.directed ?? null,
          found: p.found,
          scenarios: p.scenariosToFailure ?? null,
          shrunk: p.shrunkLength ?? null,
          seed: p.seed,
          path: p.path ?? null,
        })),
        seed,
      }),
    );
    return proof.every((p) => p.found) ? 0 : 1;
  }
  const counts = values.counts?.split(',').map((c) => c.trim());
  const stack = await startLocalStack({});
  await warmUp(stack);
  const model = modelStack(stack);
  const stop = () => void stack.stop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  try {
    if (values.directed !== undefined) {
      // One directed scenario (directed.ts): its violations of the counted invariants.
      const defect = int('directed', values.directed, 0);
      const scenario = DIRECTED[defect];
      if (!scenario) {
        console.error(`--directed: no directed scenario for defect ${defect} (there are: ${Object.keys(DIRECTED).join(', ')})`);
        return 2;
      }
      const { violations, story } = await runDirected(model, scenario, seed);
      const counted = violations.filter((v) => !counts || counts.includes(v.invariant));
      for (const v of counted.slice(0, 10)) console.log(`  [${v.invariant}] ${v.runKey}: ${v.detail}`);
      if (counted.length > 0 || values.quiet === false) log?.(story);
      console.log(
        JSON.stringify({
          directed: defect,
          title: scenario.title,
          violations: counted.length,
          first: counted[0] ? `${counted[0].invariant}: ${counted[0].runKey}: ${counted[0].detail}` : null,
        }),
      );
      return counted.length === 0 ? 0 : 1;
    }
    log?.(`model: ${values.scenarios ?? 5000} scenario(s), seed ${seed}`);
    const summary = await runModel(model, {
      scenarios: int('scenarios', values.scenarios, 5_000),
      seed,
      path: values.path,
      concurrency: int('concurrency', values.concurrency, 4),
      maxCommands: int('max-commands', values['max-commands'], MAX_COMMANDS),
      ...generator,
      timeBudgetMs: values.minutes === undefined ? undefined : int('minutes', values.minutes, 30) * 60_000,
      shrinkBudget: values['shrink-budget'] === undefined ? undefined : int('shrink-budget', values['shrink-budget'], 150),
      counts: counts ? (violation) => counts.includes(violation.invariant) : undefined,
      log,
    });
    const first = [...summary.failures].sort((a, b) => a.scenariosToFailure - b.scenariosToFailure)[0];
    if (first) {
      const line: FirstFailure = {
        scenariosToFailure: first.scenariosToFailure,
        shrunkLength: first.shrunkLength,
        seed: first.seed,
        path: first.path,
        invariant: first.violations[0]?.invariant ?? '?',
        detail: `${first.violations[0]?.runKey ?? ''}: ${first.violations[0]?.detail ?? ''}`,
      };
      console.log(`${FIRST_FAILURE_PREFIX}${JSON.stringify(line)}`);
    }
    for (const failure of summary.failures) console.log(`${formatFailure(failure)}\n`);
    log?.(
      `${summary.scenarios} scenario(s), ${summary.calls} store call(s) in ${Math.round(summary.durationMs / 1000)} s; operator actions: ${JSON.stringify(summary.revivals)}`,
    );
    log?.(
      `store calls by phase and kind: ${JSON.stringify(Object.fromEntries(Object.entries(summary.callsByKind).sort((a, b) => b[1] - a[1])))}`,
    );
    log?.(
      `time per phase (s, all lanes): ${Object.entries(summary.phases)
        .map(([phase, ms]) => `${phase} ${Math.round(ms / 100) / 10}`)
        .join(', ')}`,
    );
    console.log(
      JSON.stringify({
        scenarios: summary.scenarios,
        operations: summary.operations,
        faults: summary.faults,
        violations: summary.violations,
        seed,
      }),
    );
    return summary.violations === 0 ? 0 : 1;
  } finally {
    process.off('SIGINT', stop);
    model.clients.dynamo.destroy();
    model.clients.sqs.destroy();
    await stack.stop();
  }
}
