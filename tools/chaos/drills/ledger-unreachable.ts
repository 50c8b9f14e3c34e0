/**
 * Drill (d): the ledger becomes unreachable for one worker while it holds runs and heartbeats.
 * The victim (a child process, or in-process) talks to DynamoDB Local through a TCP proxy that
 * the drill switches to resetting every connection or to black-holing them. Its `holder` runs
 * hold until ctx.signal fires; the other runs finish quickly.
 *
 * Must hold: the holder stops (its handler's signal aborts) before its lease ends; a successor
 * (with a working connection) takes every held run over after expiry and completes it; the
 * checker's five invariants.
 */
import type { HistoryEvent } from '../../../shared/core/history.js';
import { createClients } from '../../../shared/runtime/clients.js';
import { localClientConfig } from '../../local-stack.js';
import type { ChildWorker } from '../child.js';
import { invariantViolations, iterate, tracer, type Drill, type DrillViolation } from '../drill.js';
import type { HandlerConfig } from '../handlers.js';
import { TcpProxy, type ProxyMode } from '../proxy.js';
import { unit } from '../rng.js';
import { sleepMs, until, World, SETTLE_MS } from '../world.js';
import { quiet } from './worker-killed.js';
import { allSucceeded, claimsBy, leaseEnds, loadFacts, pastSlots, randomOwner, startSuccessors, startVictim, victimJob } from './common.js';
import { atLeastOne } from './worker-killed.js';

export const ledgerUnreachableDrill: Drill = (options) =>
  iterate(
    'ledger-unreachable',
    options,
    async ({ rng, index, budget, seed, child }) => {
      const trace = tracer(`ledger-unreachable #${index}`, options.log);
      const world = await World.create(options.base, { visibilityTimeoutSeconds: 2, maxReceiveCount: 100 }, options.log);
      const proxy = TcpProxy.forEndpoint(world.endpoints.dynamoEndpoint);
      await proxy.listen();
      let victimChild: ChildWorker | undefined;
      const victimClients = createClients({
        dynamo: localClientConfig(proxy.endpoint),
        sqs: localClientConfig(world.endpoints.sqsEndpoint),
      });
      try {
        const { prefix, lease, heartbeatEvery, input, job } = victimJob(world, rng, `d${index}`, 'holder', 1_200, 2_500);
        const count = Math.max(3, Math.min(budget, child ? rng.int(4, 10) : rng.int(20, 40)));
        const slots = pastSlots(count, rng);
        const keys = slots.map((slot) => `${job.name}@${new Date(slot).toISOString()}`);
        const holdFraction = atLeastOne(seed, keys, 'hold', rng.pick([0.5, 0.8, 1]));
        // Holds outlast the drop comfortably; once the ledger is back, a victim holding a newly claimed run finishes soon.
        const victimConfig: HandlerConfig = { seed, workMs: [0, 100], holdFraction, holdMs: Math.max(6_000, 4 * lease) };
        const victim = randomOwner(prefix, 'victim', rng);
        const started = await startVictim(world, {
          owner: victim,
          job: input,
          handlerConfig: victimConfig,
          child,
          endpoints: { ...world.endpoints, dynamoEndpoint: proxy.endpoint },
          pollers: 4,
          // Untracked: the drill stops these itself at the drop, and they may hang on a black hole.
          inProcess: () => ({ track: false, doc: victimClients.doc }),
          trace,
        });
        victimChild = started.child;
        const victimPollers = started.pollers;
        const ids = await world.createRuns(slots.map((slot) => ({ job, slot })));
        const holders = keys.filter((key) => unit(seed, `${key}:hold`) < holdFraction);

        // Cut the ledger off once the victim holds runs and has heartbeated a little.
        const victimHolding = () => world.notesOf('started').filter((n) => holders.includes(n.runKey)).length;
        await until(() => victimHolding() >= Math.min(holders.length, child ? 10 : 40), SETTLE_MS, 20);
        await sleepMs(rng.int(0, heartbeatEvery * 2));
        const mode: ProxyMode = rng.pick(['reset', 'blackhole']);
        proxy.setMode(mode);
        const droppedAt = Date.now();
        // The partitioned worker receives no more work (a real one would keep failing on the ledger).
        for (const poller of victimPollers) void poller.stop();
        trace(`dropped (${mode})`);

        // The victim's holders at the moment of the drop (once the ledger is back it is a healthy worker again).
        const held = () => {
          const tokens = new Set(claimsBy(world.events, victim).map((c) => `${c.runKey}|${c.token}`));
          return world
            .notesOf('started')
            .filter((n) => holders.includes(n.runKey) && tokens.has(`${n.runKey}|${n.token}`) && n.at < droppedAt);
        };
        const aborted = () => new Map(world.notesOf('aborted').map((n) => [`${n.runKey}|${n.token}`, n.at]));
        await until(() => held().every((n) => aborted().has(`${n.runKey}|${n.token}`)), lease + SETTLE_MS, 20);
        trace('holders stopped');

        startSuccessors(world, rng, prefix, { seed, workMs: [0, 30] }, 400);
        const restoreEarly = rng.chance(0.5);
        if (restoreEarly) {
          await sleepMs(rng.int(0, lease));
          proxy.setMode('pass');
        }
        const settled = await world.waitForRuns(ids, lease + SETTLE_MS);
        proxy.setMode('pass');
        await world.stopPollers();
        if (victimChild) await victimChild.terminate(3_000);
        else await Promise.race([Promise.all(victimPollers.map((p) => p.stop())), sleepMs(5_000)]);
        trace('settled');

        await quiet(world, 300, 3_000); // let abandoned handlers finish (their writes are fenced)
        const { result, runs } = await world.check({ slots: allSucceeded(ids) });
        const violations: DrillViolation[] = invariantViolations(result);
        if (!settled)
          violations.push({
            invariant: 'no-lost-slot',
            runKey: prefix,
            detail: `runs still open ${SETTLE_MS / 1000} s after the successors started`,
          });
        const ends = leaseEnds(world.events);
        const stops = aborted();
        const holding = held();
        let stoppedAfterLeaseEnd = 0;
        for (const note of holding) {
          const stoppedAt = stops.get(`${note.runKey}|${note.token}`);
          const end = ends.get(`${note.runKey}|${note.token}`) ?? 0;
          const successor = world.events.find((e) => e.type === 'claimed' && e.runKey === note.runKey && e.token > note.token);
          if (stoppedAt === undefined) {
            // What the holder's heartbeats saw after the drop tells a stalled watchdog from a ledger that still answered.
            const beats = world.events.filter(
              (e): e is Extract<HistoryEvent, { type: 'heartbeat' }> =>
                e.type === 'heartbeat' && e.runKey === note.runKey && e.token === note.token,
            );
            const after = beats.filter((b) => b.at >= droppedAt);
            const lastLease = Math.max(0, ...beats.filter((b) => b.ok).map((b) => b.leaseUntil));
            violations.push({
              invariant: 'holder-stopped',
              runKey: note.runKey,
              detail:
                `the holder (token ${note.token}) never saw ctx.signal abort after the ledger became unreachable (${mode}; ` +
                `heartbeats answered after the drop: ${after.filter((b) => b.ok).length} ok, ${after.filter((b) => !b.ok).length} refused; ` +
                `last acknowledged lease end ${lastLease ? `${lastLease - droppedAt} ms after the drop` : 'none'}; started ${note.at - droppedAt} ms after the drop)`,
            });
          } else if (successor && successor.at < stoppedAt) {
            violations.push({
              invariant: 'holder-stopped',
              runKey: note.runKey,
              detail: `the holder (token ${note.token}) was still running ${stoppedAt - successor.at} ms after its successor claimed the run (lease end ${new Date(end).toISOString()})`,
            });
          }
          if (stoppedAt !== undefined && stoppedAt > end) stoppedAfterLeaseEnd++;
          if (successor && successor.at <= end) {
            violations.push({
              invariant: 'one-live-lease',
              runKey: note.runKey,
              detail: `successor claimed at ${new Date(successor.at).toISOString()} before the holder's lease ended`,
            });
          }
        }
        const margins = holding
          .map((n) => (ends.get(`${n.runKey}|${n.token}`) ?? 0) - (stops.get(`${n.runKey}|${n.token}`) ?? Infinity))
          .filter(Number.isFinite);
        const observations: string[] = [];
        if (stoppedAfterLeaseEnd > 0) {
          observations.push(
            "some holders stopped after the end of their last acknowledged lease: the worker's watchdog is a setInterval that needs the event loop, and under CPU load it fired late; each still stopped before its successor claimed",
          );
        }
        return {
          runs: ids.length,
          faults: 1,
          check: result,
          violations,
          facts: {
            partitions: 1,
            [`partitions_${mode}`]: 1,
            // Of the runs the victim held at the drop (other attempts may abort too: a successor on a loaded machine can lose its own lease).
            holdersStopped: holding.filter((n) => stops.has(`${n.runKey}|${n.token}`)).length,
            holdersAtDrop: holding.length,
            maxStopBeforeLeaseEndMs: Math.max(0, ...margins),
            maxStopAfterLeaseEndMs: Math.max(0, ...margins.map((m) => -m)),
            holdersStoppedAfterLeaseEnd: stoppedAfterLeaseEnd,
            maxSecondsUnreachable: Math.round((Date.now() - droppedAt) / 1000),
            ...loadFacts(world, runs),
          },
          observations,
        };
      } finally {
        proxy.setMode('pass');
        victimChild?.kill();
        await world.destroy();
        victimClients.dynamo.destroy();
        victimClients.sqs.destroy();
        await proxy.close();
      }
    },
    true,
  );
