/**
 * Runs scenarios: fc.asyncProperty over (setup, commands, scheduler), each scenario on its own
 * tables and queues of one local stack, several scenarios at once (independent fc.check lanes,
 * each with its own seed derived from the run's seed), and a summary with the replay line of
 * every failure: seed, path and the shrunk story.
 */
import fc from 'fast-check';
import type { CheckViolation } from '../verify/checker.js';
import { commandsArb, scenarioSetupArb, type CommandMix, type FaultProfiles, type JobMix, type ModelState } from './commands.js';
import { ScenarioFailure, World, type ModelStack } from './world.js';

/** Commands per scenario at most, by default. */
export const MAX_COMMANDS = 60;

export interface ModelRunOptions {
  readonly scenarios: number;
  readonly seed: number;
  /** Replay one failure: the `path` fast-check printed (with its seed). */
  readonly path?: string;
  /** Scenarios run at once (fc.check lanes). @default 4 */
  readonly concurrency?: number;
  /** Commands per scenario at most. @default MAX_COMMANDS */
  readonly maxCommands?: number;
  /** Which jobs scenarios configure (commands.ts). @default 'full' */
  readonly jobMix?: JobMix;
  /** The fault profiles scenarios draw (commands.ts). @default 'swarm' */
  readonly faultProfiles?: FaultProfiles;
  /** Which commands scenarios draw from (commands.ts): every kind, or a swarm's random half. @default 'swarm' */
  readonly commandMix?: CommandMix;
  /** Which violations fail a scenario (default: all). */
  readonly counts?: (violation: CheckViolation) => boolean;
  /** Stop at the first failure (after shrinking it). @default true */
  readonly stopOnFailure?: boolean;
  /** Wall-clock budget: no new scenario starts after this many ms (the summary counts those that ran). @default none */
  readonly timeBudgetMs?: number;
  /** Scenario runs spent shrinking one failure at most (then the smallest failure so far is reported). @default 150 */
  readonly shrinkBudget?: number;
  /** Wall-clock ms spent shrinking one failure at most (a long shrink looks like a hang). @default 10 min */
  readonly shrinkTimeMs?: number;
  readonly log?: (line: string) => void;
}

export interface ModelFailure {
  readonly seed: number;
  readonly path: string;
  /** Scenarios this lane ran up to and including the first failing one. */
  readonly laneScenariosToFailure: number;
  /** Scenarios all lanes had run when this failure was first seen (before shrinking). */
  readonly scenariosToFailure: number;
  readonly shrinks: number;
  /** Commands in the shrunk scenario. */
  readonly shrunkLength: number;
  readonly violations: readonly CheckViolation[];
  readonly commands: string;
  readonly story: string;
}

export interface ModelRunSummary {
  readonly scenarios: number;
  readonly operations: number;
  readonly faults: number;
  /** Store calls (DynamoDB and SQS) the actors made in those scenarios. */
  readonly calls: number;
  /** Operator revivals (retry, redrive, resolve) by action and the states from and to, e.g. "retry DEAD→UNKNOWN". */
  readonly revivals: Readonly<Record<string, number>>;
  /** Wall-clock ms per scenario phase, summed (shrink runs included). */
  readonly phases: PhaseTimes;
  /** Store calls by phase (fault phase or quiescence) and kind. */
  readonly callsByKind: Readonly<Record<string, number>>;
  readonly violations: number;
  readonly seed: number;
  readonly durationMs: number;
  readonly failures: readonly ModelFailure[];
}

/** Wall-clock ms spent per phase of a scenario, summed over scenarios (where the time goes). */
export interface PhaseTimes {
  create: number;
  commands: number;
  /** Quiescence, of which `settleChecks` went to reading the tables whole to see whether it may end. */
  quiesce: number;
  settleChecks: number;
  check: number;
  destroy: number;
}

/** What one lane is doing now (the progress line reports a lane that stalls). */
interface LaneNow {
  phase: keyof PhaseTimes;
  world?: World;
  /** Store calls of its world when the progress line last looked, and since when they are unchanged. */
  calls: number;
  stillSince: number;
  /** When its current scenario started (wall clock). */
  scenarioSince: number;
  /** The lane's failure and shrink state. */
  readonly state: LaneState;
  /** The lane's fc.check returned: nothing more to report. */
  done?: boolean;
}

interface Counters {
  phases: PhaseTimes;
  callsByKind: Record<string, number>;
  scenarios: number;
  operations: number;
  faults: number;
  calls: number;
  revivals: Record<string, number>;
  readonly started: number;
}

/** One lane's state: once a scenario failed, every later run of the property is a shrink attempt. */
interface LaneState {
  failedAt?: number;
  /** When the first failure was seen (wall clock). */
  failedAtMs?: number;
  shrinkRuns: number;
}

function property(stack: ModelStack, options: ModelRunOptions, counters: Counters, now: LaneNow, stopped: () => boolean) {
  const lane = now.state;
  return fc.asyncProperty(
    scenarioSetupArb(options.faultProfiles, options.jobMix),
    commandsArb(options.maxCommands ?? MAX_COMMANDS, options.commandMix),
    fc.scheduler(),
    async (setup, commands, scheduler) => {
      const shrinking = lane.failedAt !== undefined;
      // Another lane found a failure, or this lane's shrink budget is spent: pass at once (fast-check
      // then reports the smallest failure found so far).
      const shrinkSpent =
        shrinking &&
        (lane.shrinkRuns >= (options.shrinkBudget ?? 150) || Date.now() - (lane.failedAtMs ?? 0) >= (options.shrinkTimeMs ?? 600_000));
      if ((!shrinking && stopped()) || shrinkSpent) return;
      if (!shrinking && options.timeBudgetMs !== undefined && Date.now() - counters.started >= options.timeBudgetMs) return;
      if (shrinking) lane.shrinkRuns++;
      let mark = Date.now();
      const lap = (phase: keyof PhaseTimes, next: keyof PhaseTimes) => {
        const at = Date.now();
        counters.phases[phase] += at - mark;
        mark = at;
        now.phase = next;
      };
      now.phase = 'create';
      now.world = undefined;
      now.scenarioSince = Date.now();
      const world = await World.create(stack, setup, scheduler);
      now.world = world;
      lap('create', 'commands');
      try {
        await fc.asyncModelRun(() => ({ model: { commands: 0 } as ModelState, real: world }), commands);
        lap('commands', 'quiesce');
        await world.quiesce();
        lap('quiesce', 'check');
        counters.phases.settleChecks += world.settleCheckMs;
        const { result } = await world.check();
        lap('check', 'destroy');
        if (!shrinking) {
          counters.scenarios++;
          counters.operations += world.operations;
          counters.faults += world.faults.injected;
          counters.calls += world.calls;
          for (const [kind, n] of world.callsByKind) counters.callsByKind[kind] = (counters.callsByKind[kind] ?? 0) + n;
          for (const e of world.events)
            if (e.type === 'ops')
              counters.revivals[`${e.action} ${e.from}→${e.to}`] = (counters.revivals[`${e.action} ${e.from}→${e.to}`] ?? 0) + 1;
        }
        const counted = result.violations.filter(options.counts ?? (() => true));
        if (counted.length > 0) {
          lane.failedAt ??= counters.scenarios;
          lane.failedAtMs ??= Date.now();
          throw new ScenarioFailure(counted, world.story());
        }
      } finally {
        mark = Date.now();
        now.phase = 'destroy';
        await world.destroy();
        now.world = undefined;
        lap('destroy', 'create');
      }
    },
  );
}

export async function runModel(stack: ModelStack, options: ModelRunOptions): Promise<ModelRunSummary> {
  const started = Date.now();
  const concurrency = options.path ? 1 : Math.max(1, options.concurrency ?? 4);
  const counters: Counters = {
    phases: { create: 0, commands: 0, quiesce: 0, settleChecks: 0, check: 0, destroy: 0 },
    callsByKind: {},
    scenarios: 0,
    operations: 0,
    faults: 0,
    calls: 0,
    revivals: {},
    started,
  };
  const failures: ModelFailure[] = [];
  const perLane = Math.ceil(options.scenarios / concurrency);
  let stop = false;
  const lanes: LaneNow[] = Array.from({ length: concurrency }, () => ({
    phase: 'create',
    calls: 0,
    stillSince: Date.now(),
    scenarioSince: Date.now(),
    state: { shrinkRuns: 0 },
  }));
  const progress = setInterval(() => {
    options.log?.(
      `… ${counters.scenarios} scenario(s), ${counters.operations} operation(s), ${counters.calls} store call(s), ${Math.round((Date.now() - started) / 1000)} s`,
    );
    // A lane whose scenario made no store call for a minute is stalled (or waiting on a promise
    // nothing will settle): say where, so a long run that stops moving can be told from a slow one.
    for (const [i, now] of lanes.entries()) {
      if (now.done) continue;
      if (now.state.failedAt !== undefined)
        options.log?.(
          `  lane ${i}: shrinking a failure found in its scenario ${now.state.failedAt}: ${now.state.shrinkRuns} run(s) so far`,
        );
      const calls = now.world?.calls ?? -1;
      const still = calls === now.calls;
      if (!still) {
        now.calls = calls;
        now.stillSince = Date.now();
      }
      if (Date.now() - now.scenarioSince >= 55_000) {
        const what = still ? `still (no store call) for ${Math.round((Date.now() - now.stillSince) / 1000)} s` : 'busy';
        options.log?.(
          `  lane ${i}: one scenario for ${Math.round((Date.now() - now.scenarioSince) / 1000)} s, ${what}, in ${now.phase}${now.world ? `: ${now.world.whereNow()}` : ''}`,
        );
      }
    }
  }, 60_000);
  progress.unref();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      const seed = (options.seed + lane * 7919) | 0;
      const now = lanes[lane]!;
      const state = now.state;
      const before = counters.scenarios;
      // A path into the shrink tree ("3:0:0") makes fast-check go on with the siblings after it
      // (numRuns does not bound a replay): once the replayed scenario passed, the rest pass at once.
      const replayed = () => options.path !== undefined && counters.scenarios > before;
      const result = await fc.check(
        property(stack, options, counters, now, () => stop || replayed()),
        { numRuns: options.path ? 1 : perLane, seed, path: options.path, endOnFailure: false },
      );
      now.done = true;
      if (result.failed && result.counterexample) {
        const error = result.errorInstance;
        const [, commands] = result.counterexample as [unknown, Iterable<unknown>, unknown];
        const list = [...commands].map(String);
        const failure: ModelFailure = {
          seed,
          path: result.counterexamplePath ?? '',
          laneScenariosToFailure: result.numRuns,
          scenariosToFailure: state.failedAt ?? counters.scenarios - before,
          shrinks: result.numShrinks,
          shrunkLength: list.length,
          violations:
            error instanceof ScenarioFailure
              ? error.violations
              : [{ invariant: 'no-lost-slot', runKey: '-', detail: `scenario error: ${String(error)}` }],
          commands: list.join('\n'),
          story: error instanceof ScenarioFailure ? error.story : String(error),
        };
        failures.push(failure);
        options.log?.(
          `lane ${lane}: failure in its scenario ${failure.laneScenariosToFailure} (${failure.scenariosToFailure} scenario(s) run in all), shrunk in ${state.shrinkRuns} run(s) to ${failure.shrunkLength} command(s) (replay: --seed ${seed} --path ${failure.path})`,
        );
        if (options.stopOnFailure !== false) stop = true;
      } else {
        options.log?.(`lane ${lane}: ${result.numRuns} scenario(s), no failure`);
      }
    }),
  );
  clearInterval(progress);
  return {
    scenarios: counters.scenarios,
    operations: counters.operations,
    faults: counters.faults,
    calls: counters.calls,
    revivals: counters.revivals,
    phases: counters.phases,
    callsByKind: counters.callsByKind,
    violations: failures.reduce((n, f) => n + f.violations.length, 0),
    seed: options.seed,
    durationMs: Date.now() - started,
    failures,
  };
}

/** A failure as a human reads it: violations, the shrunk commands, the story, and the replay line. */
export function formatFailure(failure: ModelFailure): string {
  return [
    `violations (${failure.violations.length}):`,
    ...failure.violations.slice(0, 10).map((v) => `  [${v.invariant}] ${v.runKey}: ${v.detail}`),
    `shrunk scenario (${failure.shrunkLength} command(s)):`,
    ...failure.commands.split('\n').map((c) => `  ${c}`),
    'story:',
    ...failure.story.split('\n').map((l) => `  ${l}`),
    `replay: npm run chaos -- --model --seed ${failure.seed} --path ${failure.path}`,
  ].join('\n');
}
