/**
 * Drill (c): a worker is paused past its lease, then resumed. The victim (a real child process
 * stopped with SIGSTOP and continued with SIGCONT, or in-process behind a PauseSwitch: its calls
 * and its clock stand still) runs the `writer` handler: a fenced step, then (ignoring ctx.signal,
 * as a paused process would) the charge after a gap. It is paused between the two.
 *
 * Must hold: a successor takes each paused run over after the lease and completes it; when the
 * victim resumes, every write it attempts on a resource the successor wrote is fenced out
 * (FencedOutError) and its completion is refused, and nothing it does lands; the checker's five
 * invariants.
 */
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { InMemoryMetrics } from '../../../shared/runtime/observability.js';
import type { ChildWorker } from '../child.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation } from '../drill.js';
import { stepGapOf, type HandlerConfig } from '../handlers.js';
import { PauseSwitch } from '../switches.js';
import { sleepMs, until, World, SETTLE_MS } from '../world.js';
import { quiet } from './worker-killed.js';
import { allSucceeded, claimsBy, leaseEnds, loadFacts, pastSlots, randomOwner, startSuccessors, startVictim, victimJob } from './common.js';

/** How much of a run's gap must be left when the drill pauses (this process noticing, the pause taking hold). */
const GAP_MARGIN_MS = 150;

export const workerPausedDrill: Drill = (options) =>
  iterate(
    'worker-paused',
    options,
    async ({ rng, index, budget, seed, child }) => {
      const trace = tracer(`worker-paused #${index}`, options.log);
      const world = await World.create(options.base, { visibilityTimeoutSeconds: 2, maxReceiveCount: 100 }, options.log);
      let victimChild: ChildWorker | undefined;
      const pause = new PauseSwitch();
      try {
        const { prefix, lease, input, job } = victimJob(world, rng, `c${index}`, 'writer', 2_500, 5_000);
        const count = Math.max(3, Math.min(budget, child ? rng.int(4, 8) : rng.int(20, 40)));
        const victimConfig: HandlerConfig = { seed, stepGapMs: [800, 1_600] };
        const victim = randomOwner(prefix, 'victim', rng);
        const victimMetrics = new InMemoryMetrics();
        victimChild = (
          await startVictim(world, {
            owner: victim,
            job: input,
            handlerConfig: victimConfig,
            child,
            pollers: 4,
            inProcess: () => ({
              doc: pause.wrap(world.box.clients.doc),
              sqs: pause.wrap(world.box.clients.sqs),
              clock: pause.clock,
              metrics: victimMetrics,
            }),
            trace,
          })
        ).child;
        const ids = await world.createRuns(pastSlots(count, rng).map((slot) => ({ job, slot })));

        // Pause while some run is inside its gap: its step landed and its charge is still to come,
        // with the jitter and GAP_MARGIN_MS of the gap left. Nothing ends that attempt while the
        // worker is paused (its clock stands still, its heartbeats wait), so its charge passes the
        // attempt's guard, waits out the pause and reaches the resource after the successor wrote
        // it: the fence must stop it. Waiting for "a step landed" alone is not enough on a loaded
        // machine: by the time this process notices, the runs may be mid-step instead (their
        // responses held by the pause), and those attempts end by the heartbeat's refusal right
        // after the resume, before their charge: the guard stops them and the fence is never tried.
        // The run's attempt must also still be live (its lease not lost to a late heartbeat, which
        // a loaded machine causes): an attempt that ended already refuses the charge itself.
        const jitter = rng.int(0, 150);
        const inGap = () => {
          const pauseAt = Date.now() + jitter + GAP_MARGIN_MS;
          const ends = leaseEnds(world.events);
          const lost = new Set(world.events.flatMap((e) => (e.type === 'heartbeat' && !e.ok ? [`${e.runKey}|${e.token}`] : [])));
          return world.notesOf('step').some((n) => {
            const attempt = `${n.runKey}|${n.token}`;
            return pauseAt < n.at + stepGapOf(victimConfig, n.runKey) && pauseAt < (ends.get(attempt) ?? 0) && !lost.has(attempt);
          });
        };
        const caughtInGap = await until(inGap, SETTLE_MS, 10);
        await sleepMs(jitter);
        if (victimChild) victimChild.pause();
        else pause.pause();
        const pausedAt = Date.now();
        trace('paused');

        const victimRuns = new Set(claimsBy(world.events, victim).map((c) => c.runKey));
        startSuccessors(world, rng, prefix, { seed, stepGapMs: [0, 30] }, 400);
        // Resume once the successors finished what the victim held (its lease long gone).
        const heldIds = ids.filter((id) => victimRuns.has(`${id.job}@${new Date(id.slot).toISOString()}`));
        const takenOver = await world.waitForRuns(heldIds, lease + SETTLE_MS);
        await sleepMs(rng.chance(0.5) ? rng.int(0, 1_000) : 0);
        if (victimChild) victimChild.resume();
        else pause.resume();
        const resumedAt = Date.now();
        trace('resumed');

        const settled = await world.waitForRuns(ids, SETTLE_MS);
        // Every paused run's stale attempt must come to light: a fenced-out write or a refused outcome.
        const staleSignals = () => {
          const victimTokens = new Set(claimsBy(world.events, victim).map((c) => `${c.runKey}|${c.token}`));
          const seen = new Set<string>();
          for (const e of world.events) {
            if (e.type === 'effect' && e.result === 'fenced-out' && victimTokens.has(`${e.runKey}|${e.token}`)) seen.add(e.runKey);
            if (e.type === 'outcome' && e.owner === victim && !e.accepted) seen.add(e.runKey);
          }
          return seen;
        };
        const paused = () => pausedRuns(world, victim);
        await until(() => [...paused()].every((k) => staleSignals().has(k)), SETTLE_MS + lease, 50);
        await world.stopPollers();
        const childMetrics = victimChild ? await victimChild.terminate() : undefined;
        trace('stopped');

        await quiet(world, 300, 3_000); // let abandoned handlers finish (their writes are fenced)
        const { result, runs } = await world.check({ slots: allSucceeded(ids) });
        const violations: DrillViolation[] = invariantViolations(result);
        if (!takenOver || !settled)
          violations.push({
            invariant: 'no-lost-slot',
            runKey: prefix,
            detail: `runs still open ${SETTLE_MS / 1000} s after the victim resumed`,
          });
        const signals = staleSignals();
        const stale = [...paused()];
        const pausedTokens = pausedRunTokens(world, victim, pausedAt);
        for (const runKey of stale) {
          if (!signals.has(runKey)) {
            violations.push({
              invariant: 'stale-writer',
              runKey,
              detail: 'the paused worker resumed, but none of its writes was fenced out and no completion of its was refused',
            });
          }
          // The token it held while paused must never complete the run (a fresh claim after resume may).
          const late = world.events.find(
            (e) => e.type === 'outcome' && e.runKey === runKey && e.accepted && e.token === pausedTokens.get(runKey) && e.at >= resumedAt,
          );
          if (late && late.type === 'outcome')
            violations.push({
              invariant: 'stale-writer',
              runKey,
              detail: `the resumed worker's ${late.status} outcome with its paused token ${late.token} was accepted`,
            });
        }
        const fencedOut = world.events.filter((e) => e.type === 'effect' && e.result === 'fenced-out').length; // all by the victim: successors write last
        const refused = world.events.filter((e) => e.type === 'outcome' && e.owner === victim && !e.accepted).length;
        const metric = childMetrics?.FencingRejections ?? victimMetrics.get('FencingRejections');
        const observations: string[] = [];
        if (metric > fencedOut) {
          observations.push(
            'FencingRejections is counted twice per rejected write when the handler lets FencedOutError propagate (once in the fenced store hook, once in execute())',
          );
        }
        return {
          runs: ids.length,
          faults: 1,
          check: result,
          violations,
          facts: {
            pauses: 1,
            pausedRuns: stale.length,
            pausedInAGap: caughtInGap ? 1 : 0,
            staleWritesFencedOut: fencedOut,
            staleCompletionsRefused: refused,
            fencingRejectionsMetric: metric,
            maxPauseMs: resumedAt - pausedAt,
            ...loadFacts(world, runs),
          },
          observations,
        };
      } finally {
        pause.resume();
        victimChild?.kill();
        await world.destroy();
      }
    },
    true,
  );

/** The token the victim held on each run when it was paused (its last claim before the pause). */
function pausedRunTokens(world: World, victim: string, pausedAt: number): Map<string, number> {
  const tokens = new Map<string, number>();
  for (const e of world.events) if (e.type === 'claimed' && e.owner === victim && e.at <= pausedAt) tokens.set(e.runKey, e.token);
  return tokens;
}

/** Runs the victim held when it was paused: claimed by it and not completed by it. */
function pausedRuns(world: World, victim: string): Set<string> {
  const claimed = new Map<string, number>();
  for (const e of world.events) if (e.type === 'claimed' && e.owner === victim) claimed.set(e.runKey, e.token);
  for (const e of world.events) {
    if (e.type === 'outcome' && e.owner === victim && e.accepted && e.status === RunStatus.SUCCEEDED) claimed.delete(e.runKey);
  }
  return new Set(claimed.keys());
}
