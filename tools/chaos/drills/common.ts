/** Pieces the worker-fault drills (kill, pause, ledger unreachable) share. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { HistoryEvent } from '../../../shared/core/history.js';
import type { Job, JobInput } from '../../../shared/schedule/job-schema.js';
import { RunStatus, type Run, type RunId } from '../../../shared/core/vocabulary.js';
import type { LocalPoller } from '../../local-poller.js';
import type { LocalEndpoints } from '../../local-stack.js';
import { ChildWorker } from '../child.js';
import type { HandlerConfig } from '../handlers.js';
import type { PollerSpec, World } from '../world.js';
import type { Rng } from '../rng.js';

/** A job whose runs the drill creates itself (slots in the past: due at once, no planner timing). */
export function workerJob(name: string, handler: string, lease: number, heartbeatEvery: number): JobInput {
  return {
    name,
    schedule: '* * * * * *',
    handler,
    lease,
    heartbeatEvery,
    startLead: 0,
    timeout: '60s',
    // Leases of a second or two: on a starved machine a healthy worker can lose a lease to its own
    // late heartbeat, which spends an attempt. The budget is large enough that such a run still
    // ends SUCCEEDED once the machine breathes; a run that truly fails still ends DEAD.
    retry: { maxAttempts: 10, backoff: { base: 100, max: 1_000, jitter: 'full' } },
  };
}

/** `count` distinct whole-second slots, a minute or more in the past. */
export function pastSlots(count: number, rng: Rng): number[] {
  const base = Math.floor(Date.now() / 1_000) * 1_000 - 60_000 - rng.int(0, 600) * 1_000;
  return Array.from({ length: count }, (_, i) => base - i * 1_000);
}

/** Lease parameters a drill iteration draws: lease in [min, max] ms, heartbeat a third or a quarter of it. */
export function leaseOf(rng: Rng, min: number, max: number): { lease: number; heartbeatEvery: number } {
  const lease = rng.int(min, max);
  return { lease, heartbeatEvery: Math.round(lease / rng.pick([3, 4])) };
}

export function claimsBy(events: readonly HistoryEvent[], owner: string): Extract<HistoryEvent, { type: 'claimed' }>[] {
  return events.filter((e): e is Extract<HistoryEvent, { type: 'claimed' }> => e.type === 'claimed' && e.owner === owner);
}

/** When each (run, token) lease ended at the latest: the claim's lease, extended by accepted heartbeats. */
export function leaseEnds(events: readonly HistoryEvent[]): Map<string, number> {
  const ends = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'claimed') ends.set(`${e.runKey}|${e.token}`, Math.max(ends.get(`${e.runKey}|${e.token}`) ?? 0, e.leaseUntil));
    if (e.type === 'heartbeat' && e.ok) ends.set(`${e.runKey}|${e.token}`, Math.max(ends.get(`${e.runKey}|${e.token}`) ?? 0, e.leaseUntil));
  }
  return ends;
}

/** Expected slots for the checker: every one of these runs ends SUCCEEDED. */
export function allSucceeded(ids: readonly RunId[]) {
  return ids.map((id) => ({ job: id.job, slot: id.slot, shard: id.shard, statuses: [RunStatus.SUCCEEDED] }));
}

export function randomOwner(prefix: string, role: string, rng: Rng): string {
  return `${prefix}-${role}-${rng.int(0, 46_655).toString(36)}`;
}

export interface VictimJob {
  readonly prefix: string;
  readonly lease: number;
  readonly heartbeatEvery: number;
  readonly input: JobInput;
  readonly job: Job;
}

/**
 * Sets the world's one job, drawing its prefix and then its lease and heartbeat: the first draws
 * of every worker-fault iteration, in this order so that a seed replays the same iteration.
 */
export function victimJob(world: World, rng: Rng, stem: string, handler: string, minLeaseMs: number, maxLeaseMs: number): VictimJob {
  const prefix = `${stem}-${rng.int(0, 46_655).toString(36)}`;
  const { lease, heartbeatEvery } = leaseOf(rng, minLeaseMs, maxLeaseMs);
  const input = workerJob(`${prefix}-j`, handler, lease, heartbeatEvery);
  world.setJobs([input]);
  return { prefix, lease, heartbeatEvery, input, job: world.job(input.name) };
}

export interface VictimOptions {
  readonly owner: string;
  readonly job: JobInput;
  readonly handlerConfig: HandlerConfig;
  /** A real child process, for drills that signal it or cut its own connection; else in-process pollers. */
  readonly child: boolean;
  /** Where the child reaches the ledger and queue (a drill may put a proxy in between). @default the world's */
  readonly endpoints?: LocalEndpoints;
  /** How many in-process pollers play the victim: one owner, like concurrent Lambda invocations. */
  readonly pollers: number;
  /**
   * The in-process stand-in for the drill's fault (switch-wrapped clients, clock, tracking).
   * Called once per poller so that each keeps its own wrapped clients.
   */
  readonly inProcess: () => Omit<PollerSpec, 'owner' | 'handlerConfig' | 'clockSkewMs'>;
  readonly trace: (step: string) => void;
}

export interface Victim {
  /** Set when the victim is a child process: the drill kills, pauses or terminates it. */
  readonly child: ChildWorker | undefined;
  /** Empty when the victim is a child process. */
  readonly pollers: readonly LocalPoller[];
}

/** Starts the worker a drill will harm, reporting into `world` whichever form it takes. */
export async function startVictim(world: World, options: VictimOptions): Promise<Victim> {
  if (options.child) {
    const child = await ChildWorker.start({
      endpoints: options.endpoints ?? world.endpoints,
      owner: options.owner,
      jobs: [options.job],
      handlerConfig: options.handlerConfig,
      clockSkewMs: 200,
      onEvent: (e) => world.sink.record(e),
      onNote: (n) => void world.notes.push(n),
    });
    options.trace('child ready');
    return { child, pollers: [] };
  }
  const pollers: LocalPoller[] = [];
  for (let i = 0; i < options.pollers; i++) {
    const { poller } = world.startPoller({
      owner: options.owner,
      ...options.inProcess(),
      handlerConfig: options.handlerConfig,
      clockSkewMs: 200,
    });
    pollers.push(poller);
  }
  return { child: undefined, pollers };
}

/**
 * Starts one or two healthy workers that take the victim's runs over once its leases lapse. The
 * draws (how many, then per successor its owner and its clock skew up to `maxClockSkewMs`) come
 * in this order so that a seed replays the same iteration.
 */
export function startSuccessors(world: World, rng: Rng, prefix: string, handlerConfig: HandlerConfig, maxClockSkewMs: number): void {
  for (let i = 0, n = rng.int(1, 2); i < n; i++) {
    world.startPoller({ owner: randomOwner(prefix, `successor${i}`, rng), handlerConfig, clockSkewMs: rng.int(100, maxClockSkewMs) });
  }
}

/**
 * How hard the environment pushed back: the slowest heartbeat round trip, leases lost, the most
 * claims one run needed, and DEAD runs by error code (e.g. attempts burnt by lease losses).
 */
export function loadFacts(world: World, runs: readonly Run[]): Record<string, number> {
  const latencies = world.metrics.observations.get('HeartbeatLatency') ?? [];
  const facts: Record<string, number> = {
    maxHeartbeatLatencyMs: Math.max(0, ...latencies),
    leaseLost: world.metrics.get('LeaseLost'),
    maxAttemptsOfARun: Math.max(0, ...runs.map((r) => r.attempt)),
  };
  for (const run of runs)
    if (run.status === RunStatus.DEAD)
      facts[`dead_${run.lastError?.code ?? 'unknown'}`] = (facts[`dead_${run.lastError?.code ?? 'unknown'}`] ?? 0) + 1;
  return facts;
}

/**
 * What a loaded machine (a busy CI box, the suite's other heavy files) adds to a path of
 * sequential DynamoDB and SQS calls, measured while the drill runs: the longest stall of this
 * process's event loop, plus every call on the path as slow as the slowest call the world's
 * clients made. A starved DynamoDB Local or SQS emulator delays every call alike, and a run's path
 * is several calls long (a poller finishes its batch before it polls again), so one slow call's
 * worth is not enough. Bounds on lag or takeover time add this, so that they measure the
 * scheduler, not the machine: at idle it is a few hundred ms, under `stress-ng` several seconds.
 */
export interface MachineMeter {
  /** The longest event-loop stall of this process so far, ms. */
  readonly stallMs: () => number;
  /** The slowest DynamoDB or SQS call so far, ms. */
  readonly slowestCallMs: () => number;
  /** stallMs + calls × slowestCallMs. */
  readonly slackMs: (calls: number) => number;
  /** Stops the event-loop monitor (the call meter lives as long as the world's clients). */
  readonly stop: () => void;
}

export function machineMeter(world: World): MachineMeter {
  const stalls = monitorEventLoopDelay({ resolution: 20 });
  stalls.enable();
  let slowest = 0;
  const meter = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    const sentAt = performance.now();
    try {
      return await next(args);
    } finally {
      slowest = Math.max(slowest, Math.round(performance.now() - sentAt));
    }
  };
  world.box.clients.dynamo.middlewareStack.add(meter as never, { step: 'finalizeRequest', name: 'slowest-call' });
  world.box.clients.sqs.middlewareStack.add(meter as never, { step: 'finalizeRequest', name: 'slowest-call' });
  const stallMs = () => Math.round(stalls.max / 1e6);
  return {
    stallMs,
    slowestCallMs: () => slowest,
    slackMs: (calls) => stallMs() + calls * slowest,
    stop: () => stalls.disable(),
  };
}
