/**
 * Drill (b): a worker is killed after its side effect, before recording the outcome. The victim
 * (a real child process killed with SIGKILL, or in-process behind a KillSwitch) charges some runs
 * and then hangs holding them (heartbeating) until it dies; others are caught mid-flight.
 *
 * Must hold: after the lease a successor takes every orphaned run over (claim from RUNNING with a
 * larger token) and completes it, and no business key is charged twice (the handler implements
 * both reconcile() and a business-key condition on its charge); the checker's five invariants.
 * And the takeover is prompt: at most lease + clock allowance after the victim's last accepted
 * heartbeat, plus the slack below (takeoverBound).
 */
import { RunStatus } from '../../../shared/core/vocabulary.js';
import type { HistoryEvent } from '../../../shared/core/history.js';
import type { ChildWorker } from '../child.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation } from '../drill.js';
import type { DrillNote, HandlerConfig } from '../handlers.js';
import { unit } from '../rng.js';
import { KillSwitch } from '../switches.js';
import { sleepMs, until, World, SETTLE_MS } from '../world.js';
import {
  allSucceeded,
  claimsBy,
  leaseEnds,
  loadFacts,
  pastSlots,
  randomOwner,
  machineMeter,
  startSuccessors,
  startVictim,
  victimJob,
} from './common.js';

/** The largest clock allowance a successor of this drill is given (startSuccessors' bound). */
const SUCCESSOR_MAX_ALLOWANCE_MS = 500;

/**
 * How late after its lease a dead victim's run may be taken over: the successor's allowance, plus
 * - one heartbeat period: the victim's last accepted heartbeat may be one the drill never saw (in
 *   flight when the victim died: DynamoDB applied it, the report died with the process);
 * - SQS redelivery: a message is hidden in whole seconds, and a victim that died before its first
 *   visibility change leaves the message hidden for the queue's own 2 s (leases here are
 *   ≥ 1.2 s, so up to 0.8 s past the lease), then the pollers look every ~50 ms: 1.5 s.
 * A takeover later than this means the message came back late or was hidden again (a second
 * lost), not a slow machine. A loaded machine delays every takeover alike: the drill adds its
 * measured slack (machineMeter) for the TAKEOVER_PATH_CALLS calls between the message coming back
 * and the claim committing.
 */
export function takeoverBound(heartbeatEvery: number): number {
  return SUCCESSOR_MAX_ALLOWANCE_MS + heartbeatEvery + 1_500;
}

/**
 * The sequential calls between an orphan's message coming back and its takeover committing, when
 * the successor that receives it is busy with a batch of other orphans (they come back together):
 * that batch's claim, reconcile read, charge, outcome and message delete, then the ReceiveMessage
 * that returns this orphan and its own claim.
 */
export const TAKEOVER_PATH_CALLS = 7;

/**
 * The hung runs (charged, then held by the victim until it died) that a successor took over
 * without any attempt after the victim's asking reconcile() first. Judged per run, and from any
 * later attempt: on a loaded machine the victim's own pollers may take a hung run over before the
 * kill (its heartbeats came late, its lease ran out) and reconcile it themselves, leaving the
 * successors nothing to reconcile; that is the guarantee kept, not broken. A run no successor
 * claimed is judged by the takeover check instead.
 */
export function unreconciledTakeovers(
  hung: readonly DrillNote[],
  events: readonly HistoryEvent[],
  reconciles: readonly DrillNote[],
  victim: string,
): string[] {
  const reconciledAfter = (runKey: string, token: number) => reconciles.some((r) => r.runKey === runKey && r.token > token);
  const takenOverBySuccessor = (runKey: string, token: number) =>
    events.some((e) => e.type === 'claimed' && e.runKey === runKey && e.owner !== victim && e.token > token);
  return hung.filter((n) => takenOverBySuccessor(n.runKey, n.token) && !reconciledAfter(n.runKey, n.token)).map((n) => n.runKey);
}

/** Raises `fraction` just enough that at least one of `keys` is chosen (the handler draws the same numbers). */
export function atLeastOne(seed: number, keys: readonly string[], label: string, fraction: number): number {
  const lowest = Math.min(...keys.map((key) => unit(seed, `${key}:${label}`)));
  return Math.max(fraction, lowest + 1e-9);
}

/** Waits until nothing new was reported for `quietMs` (at most `maxMs`). */
export async function quiet(world: World, quietMs: number, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  let seen = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const now = world.events.length + world.notes.length;
    if (now !== seen) {
      seen = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
    await sleepMs(25);
  }
}

export const workerKilledDrill: Drill = (options) =>
  iterate(
    'worker-killed',
    options,
    async ({ rng, index, budget, seed, child }) => {
      const trace = tracer(`worker-killed #${index}`, options.log);
      const world = await World.create(options.base, { visibilityTimeoutSeconds: 2, maxReceiveCount: 100 }, options.log);
      let victimChild: ChildWorker | undefined;
      const machine = machineMeter(world);
      try {
        const { prefix, lease, heartbeatEvery, input, job } = victimJob(world, rng, `b${index}`, 'charge', 1_200, 2_500);
        const count = Math.max(4, Math.min(budget, child ? rng.int(6, 10) : rng.int(25, 50)));
        const slots = pastSlots(count, rng);
        const keys = slots.map((slot) => `${job.name}@${new Date(slot).toISOString()}`);
        const victimConfig: HandlerConfig = {
          seed,
          workMs: [0, 150],
          hangAfterCharge: atLeastOne(seed, keys, 'hang', rng.pick([0.3, 0.5, 0.8])),
        };
        const victim = randomOwner(prefix, 'victim', rng);
        const kill = new KillSwitch();
        victimChild = (
          await startVictim(world, {
            owner: victim,
            job: input,
            handlerConfig: victimConfig,
            child,
            pollers: 5,
            // Untracked: a killed worker's calls never complete, so stopping it would hang the world.
            inProcess: () => ({
              track: false,
              doc: kill.wrap(world.box.clients.doc),
              sqs: kill.wrap(world.box.clients.sqs),
              history: kill.history(world.sink),
              hooks: kill.hooks(world.hooks),
            }),
            trace,
          })
        ).child;
        const ids = await world.createRuns(slots.map((slot) => ({ job, slot })));

        // Kill after a charge that hangs: at once, or once the victim has gone quiet.
        await until(() => world.notesOf('hang').length > 0, SETTLE_MS);
        if (rng.chance(0.5)) await sleepMs(rng.int(0, 300));
        else await quiet(world, 300, 5_000);
        if (victimChild) {
          victimChild.kill();
          await victimChild.exited;
        } else kill.kill();
        trace('killed');

        startSuccessors(world, rng, prefix, { seed, workMs: [0, 30] }, SUCCESSOR_MAX_ALLOWANCE_MS);
        const settled = await world.waitForRuns(ids, lease + SETTLE_MS);
        trace('settled');
        await world.stopPollers();

        await quiet(world, 300, 3_000); // let abandoned handlers finish (their writes are fenced)
        const { result, runs } = await world.check({ slots: allSucceeded(ids) });
        const violations: DrillViolation[] = invariantViolations(result);
        if (!settled)
          violations.push({ invariant: 'no-lost-slot', runKey: prefix, detail: `runs still open ${SETTLE_MS / 1000} s after the kill` });
        const victimTokens = new Set(claimsBy(world.events, victim).map((c) => `${c.runKey}|${c.token}`));
        const hung = world.notesOf('hang').filter((n) => victimTokens.has(`${n.runKey}|${n.token}`));
        const successorTokens = new Set(
          world.events.filter((e) => e.type === 'claimed' && e.owner !== victim).map((e) => `${e.runKey}|${'token' in e ? e.token : ''}`),
        );
        const ends = leaseEnds(world.events);
        machine.stop();
        const stallMs = machine.stallMs();
        const slowestCallMs = machine.slowestCallMs();
        const bound = takeoverBound(heartbeatEvery) + machine.slackMs(TAKEOVER_PATH_CALLS);
        let maxTakeoverLateMs = 0;
        for (const note of hung) {
          const takeover = world.events.find(
            (e) => e.type === 'claimed' && e.runKey === note.runKey && e.token > note.token && e.from === RunStatus.RUNNING,
          );
          if (!takeover) {
            violations.push({
              invariant: 'takeover',
              runKey: note.runKey,
              detail: 'the victim died holding this run after its charge, but no successor took it over from RUNNING',
            });
            continue;
          }
          const leaseEnd = ends.get(`${note.runKey}|${note.token}`);
          if (leaseEnd === undefined) continue; // the claim's report died with the child: no lease to measure from
          const late = takeover.at - leaseEnd;
          maxTakeoverLateMs = Math.max(maxTakeoverLateMs, late);
          if (late > bound) {
            violations.push({
              invariant: 'takeover-bound',
              runKey: note.runKey,
              detail: `taken over ${late} ms after the victim's lease ended (lease ${lease} ms, heartbeat ${heartbeatEvery} ms): more than the ${bound} ms allowance + slack (${stallMs} ms of it this process stalled, ${TAKEOVER_PATH_CALLS} × ${slowestCallMs} ms the slowest DynamoDB or SQS call)`,
            });
          }
        }
        const bySuccessor = (kind: 'charged' | 'reconcile') =>
          world.notesOf(kind).filter((n) => successorTokens.has(`${n.runKey}|${n.token}`));
        const prevented = bySuccessor('charged').filter((n) => n.note === 'charged' && n.result === 'condition-failed').length;
        const reconciled = bySuccessor('reconcile').length;
        // Every takeover from RUNNING asks the handler's reconcile() first; the charge condition
        // is the second line of defence (secondChargePrevented counts where it was needed).
        for (const runKey of unreconciledTakeovers(hung, world.events, world.notesOf('reconcile'), victim)) {
          violations.push({
            invariant: 'reconcile-on-takeover',
            runKey,
            detail:
              "the victim died holding this run after its charge; a successor took it over, and no attempt after the victim's called reconcile()",
          });
        }
        return {
          runs: ids.length,
          faults: 1,
          check: result,
          violations,
          facts: {
            kills: 1,
            chargedThenKilled: hung.length,
            victimClaims: victimTokens.size,
            secondChargePrevented: prevented,
            reconcileOnTakeover: reconciled,
            maxTakeoverLateMs,
            stallMs,
            slowestCallMs,
            ...loadFacts(world, runs),
          },
          observations: [],
        };
      } finally {
        machine.stop();
        victimChild?.kill();
        await world.destroy();
      }
    },
    true,
  );
