/**
 * The state a model scenario's world shares between its parts, and the gate every actor's store
 * call passes (actor-io.ts): one call through at a time, in the order the scenario's
 * fc.scheduler picks. Also the story, the tracking of actors' activities, and virtual time's
 * advance. The parts (world-config.ts, planner-driver.ts, fleet.ts, operator.ts, quiescence.ts)
 * act on it; world.ts composes them.
 */
import type { Scheduler } from 'fast-check';
import { backfill, type BackfillDeps, type BackfillReport, type BackfillRequest } from '../../shared/operations/backfill.js';
import type { HistoryEvent, HistorySink } from '../../shared/core/history.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { InMemoryMetrics } from '../../shared/runtime/observability.js';
import { PLANNER_SCHEDULE, RUN_QUEUES } from '../../shared/core/resources.js';
import { actorClients, type ActorClients, type Gate } from './actor-io.js';
import { FaultPlan, prng, type CallInfo, type FaultKind } from './faults.js';
import { BehaviourKind, type Behaviour } from './handlers.js';
import { readFinal, type FinalTables } from './ledger-view.js';
import { ModelQueue } from './model-queue.js';
import type { TickRecord, TimelineEvent } from './owed.js';
import { VirtualTime } from './virtual-time.js';
import type { OperatorReports } from './report-checks.js';
import { iso, never, storyOf, type Container, type JobSpec, type ModelStack, type ScenarioSetup } from './world-setup.js';

export class Stage implements Gate {
  readonly time: VirtualTime;
  readonly faults: FaultPlan;
  readonly queue: ModelQueue;
  readonly events: HistoryEvent[] = [];
  readonly storyLines: string[] = [];
  readonly timeline: TimelineEvent[] = [];
  readonly metrics = new InMemoryMetrics();
  specs = new Map<string, JobSpec>();
  jobs: Job[] = [];
  partitions: number;
  quiescent = false;
  faultPhaseEnd: number | undefined;
  operations = 0;
  /** Store calls of every actor (each SDK call once, whatever its retries). */
  calls = 0;
  /** Wall-clock ms quiescence spent reading the tables whole to tell whether the world has settled. */
  settleCheckMs = 0;
  readonly callsByKind = new Map<string, number>();
  readonly containers: Container[];
  private readonly cursors = new Map<string, number>();
  readonly holds = new Map<string, (() => void)[]>();
  /** Calls sent and not parked at the gate (on their way to it, or at the store). */
  private moving = 0;
  private readonly idleWaiters: (() => void)[] = [];
  readonly activities = new Set<Promise<unknown>>();
  readonly random: () => number;
  readonly plannerClients: ActorClients;
  readonly opsClients: ActorClients;
  nextJob = 0;
  private seq = 0;
  tickCommands = 0;
  readonly ticks: TickRecord[] = [];
  /** What operator commands reported (report-checks.ts holds the model to them). */
  readonly reports: OperatorReports = { revived: [], triggers: [] };
  /** Jobs paused as the operator last confirmed. */
  readonly pausedJobs = new Set<string>();
  readonly extraContainers: Container[] = [];
  /** Planner ticks and operator actions in flight. */
  unkillableInFlight = 0;

  protected constructor(
    readonly stack: ModelStack,
    readonly setup: ScenarioSetup,
    readonly scheduler: Scheduler,
    readonly tables: { readonly ledger: string; readonly payments: string },
    readonly queues: {
      readonly runQueueUrl: string;
      readonly deadLetterQueueUrl: string;
      readonly runQueueArn: string;
      readonly deadLetterQueueArn: string;
    },
  ) {
    this.time = new VirtualTime(setup.start);
    this.faults = new FaultPlan(setup.faults, setup.seed);
    this.random = prng(setup.seed ^ 0x5bd1e995);
    this.partitions = setup.partitions;
    this.queue = new ModelQueue(stack.clients.sqs, this.time, {
      queueUrl: queues.runQueueUrl,
      deadLetterQueueUrl: queues.deadLetterQueueUrl,
      visibilityMs: RUN_QUEUES.visibilityTimeoutSeconds * 1000,
      maxReceiveCount: RUN_QUEUES.maxReceiveCount,
    });
    this.containers = setup.containers.map((spec, i) => ({
      name: `w${i}`,
      spec,
      generation: 0,
      actor: `w${i}#0`,
      busy: false,
      invocations: 0,
      owner: '',
      held: [],
      paused: false,
    }));
    this.plannerClients = this.clientsFor('planner', setup.plannerSdkAttempts);
    this.opsClients = this.clientsFor('ops', 3);
  }

  // ---------------------------------------------------------------- gate (actor-io.ts)

  started(): void {
    this.moving++;
  }

  finished(): void {
    this.moving--;
    this.wakeIfIdle();
  }

  private park(): void {
    this.moving--;
    this.wakeIfIdle();
  }

  private unpark(): void {
    this.moving++;
  }

  private wakeIfIdle(): void {
    if (this.moving === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  async enter(actor: string, call: CallInfo, latencyMs: number): Promise<void> {
    this.calls++;
    // By phase and kind (reads also by actor and command): where a scenario's store calls go.
    const role = actor === 'planner' || actor === 'ops' ? actor : 'worker';
    const kind = `${this.quiescent ? 'quiesce' : 'faults'} ${call.kind}${call.kind === 'read' ? ` ${role} ${call.command.replace('Command', '')}` : ''}`;
    this.callsByKind.set(kind, (this.callsByKind.get(kind) ?? 0) + 1);
    this.park();
    if (latencyMs > 0) {
      this.disturbed(actor, 'delayed');
      this.say(`${actor} ${call.kind}: +${Math.round(latencyMs / 1000)} s latency`);
      await this.time.sleepOf(actor)(latencyMs);
    }
    for (let released = false; ; ) {
      const state = this.time.state(actor);
      if (state === 'dead') return never();
      if (state === 'frozen') {
        await new Promise<void>((resolve) => this.holds.set(actor, [...(this.holds.get(actor) ?? []), resolve]));
        continue;
      }
      if (released) break;
      await this.scheduler.schedule(Promise.resolve(), `${actor} ${call.kind}`);
      released = true;
    }
    this.unpark();
  }

  note(actor: string, call: CallInfo, fault: FaultKind): void {
    this.say(`${actor} ${call.kind} (${call.command.replace('Command', '')}): ${fault}`);
  }

  unanswered(actor: string, call: CallInfo, input: Record<string, unknown>): void {
    const runKey = this.runKeyOfItem(input.Key);
    if (runKey === undefined) return;
    const container = [...this.containers, ...this.extraContainers].find((l) => l.actor === actor);
    this.say(`${actor} ${call.kind} of ${runKey}: committed, every answer lost`);
    this.events.push({ type: 'actor-disturbed', at: this.time.now(), owner: container?.owner ?? actor, kind: 'unanswered', runKey });
  }

  /** The run key of a run item's key (`JOB#<job>` / `RUN#<slot>#<shard>`), if it is one. */
  private runKeyOfItem(key: unknown): string | undefined {
    if (!key || typeof key !== 'object') return undefined;
    const { pk, sk } = key as { pk?: unknown; sk?: unknown };
    if (typeof pk !== 'string' || typeof sk !== 'string' || !pk.startsWith('JOB#') || !sk.startsWith('RUN#')) return undefined;
    const [, iso, shard] = sk.split('#');
    const job = pk.slice('JOB#'.length);
    return runKeyOf(job, Date.parse(iso ?? ''), Number(shard), this.specs.get(job)?.shards ?? 1);
  }

  private async ioIdle(): Promise<void> {
    for (let i = 0; i < 10_000; i++) {
      if (this.moving > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.moving === 0) return;
    }
  }

  private batching = 0;

  async settleUnlessBatched(): Promise<void> {
    if (this.batching === 0) await this.settle();
  }

  /**
   * Starts several actions at once and only then lets the world settle: their store calls
   * interleave in the scheduler's order (two ticks at once, a resolve racing a takeover, …).
   */
  async together(actions: readonly (() => Promise<void>)[]): Promise<void> {
    this.batching++;
    try {
      for (const action of actions) await action();
    } finally {
      this.batching--;
    }
    await this.settleUnlessBatched();
  }

  /** Lets every released call land, one at a time in the scheduler's order, until nothing can move. */
  async settle(): Promise<void> {
    for (let steps = 0; steps < 20_000; steps++) {
      await this.ioIdle();
      if (this.scheduler.count() === 0) return;
      await this.scheduler.waitNext(1);
    }
    throw new Error('the world did not settle within 20,000 steps');
  }

  clientsFor(actor: string, attempts: number): ActorClients {
    return actorClients(
      actor,
      {
        dynamoEndpoint: this.stack.endpoints.dynamoEndpoint,
        sqsEndpoint: this.stack.endpoints.sqsEndpoint,
        maxAttempts: attempts,
        runQueueUrl: this.queues.runQueueUrl,
      },
      this,
      this.faults,
      this.queue,
    );
  }

  /** A history sink for an actor whose clock is skewed: instants become true virtual time. */
  sinkFor(skewMs: number): HistorySink {
    return {
      record: (event) => {
        const at = this.time.now();
        const line = storyOf(event);
        if (line) this.say(line);
        if (event.type === 'claimed' || event.type === 'heartbeat')
          this.events.push({ ...event, at, leaseUntil: event.leaseUntil - skewMs });
        else this.events.push({ ...event, at });
      },
    };
  }

  disturbed(actor: string, kind: 'killed' | 'paused' | 'delayed'): void {
    const container = this.containers.find((l) => l.actor === actor);
    const owner = container?.owner ?? actor;
    const runKeys = container && container.busy ? container.held : [''];
    for (const runKey of runKeys.length > 0 ? runKeys : [''])
      this.events.push({ type: 'actor-disturbed', at: this.time.now(), owner, kind, runKey });
  }

  say(line: string): void {
    this.storyLines.push(`${iso(this.time.now())} ${line}`);
  }

  track(activity: Promise<unknown>): void {
    const tracked = activity.finally(() => this.activities.delete(tracked));
    this.activities.add(tracked);
  }

  /**
   * Tracks a planner tick or an operator action: actors that are never killed, so quiescence can
   * wait for them (a tick whose response is delayed has already written what it planned).
   */
  trackUnkillable(activity: Promise<unknown>): void {
    this.unkillableInFlight++;
    this.track(activity.finally(() => this.unkillableInFlight--));
  }

  container(index: number): Container {
    return this.containers[index % this.containers.length]!;
  }

  get containerCount(): number {
    return this.containers.length;
  }

  /** The model's event order (ticks, config changes, operator actions). */
  nextSeq(): number {
    return this.seq++;
  }

  /** The tables as the harness sees them (consistent scans, every page): what an operator's dashboards and `ops status` show. */
  readTables(): Promise<FinalTables> {
    return readFinal(this.stack.clients.doc, { ledger: this.tables.ledger, business: this.tables.payments });
  }

  groupOf(job: string): string {
    return this.specs.get(job)?.group ?? job;
  }

  behaviourFor(job: string): Behaviour {
    const spec = this.specs.get(job);
    // A long job's work is long, not faulty: the same in quiescence.
    if (spec?.longRun !== undefined) return { kind: BehaviourKind.LONG, workMs: 0, writes: spec.longRun };
    if (this.quiescent || !spec || spec.behaviours.length === 0) return { kind: BehaviourKind.OK, workMs: 100, writes: 1 };
    const cursor = this.cursors.get(job) ?? 0;
    this.cursors.set(job, cursor + 1);
    return spec.behaviours[cursor % spec.behaviours.length]!;
  }

  async advance(ms: number): Promise<void> {
    await this.time.advanceTo(this.time.now() + ms, () => this.settle());
  }

  /** Advances to the next instant at `offsetMs` past a whole minute. */
  async advanceToMinute(offsetMs: number): Promise<void> {
    const minute = PLANNER_SCHEDULE.tickMs;
    const now = this.time.now();
    let target = Math.floor(now / minute) * minute + offsetMs;
    while (target <= now) target += minute;
    await this.time.advanceTo(target, () => this.settle());
  }

  /**
   * A backfill as the model owes it: its range is known before its first put (runs may exist from
   * then on) and owed in full once it returns.
   */
  async recordedBackfill(deps: BackfillDeps, request: BackfillRequest): Promise<BackfillReport> {
    const { job, from, to } = request;
    this.timeline.push({ kind: 'backfill-started', seq: this.nextSeq(), job: job.name, slotFrom: from, slotTo: to });
    const report = await backfill(deps, request);
    this.timeline.push({ kind: 'backfill', seq: this.nextSeq(), job: job.name, definition: job, slotFrom: from, slotTo: to });
    return report;
  }

  /** One run as the harness reads it (not an actor's call: no gate, no faults). */
  async harnessRun(runKey: string): Promise<Run | undefined> {
    const { runs } = await this.readTables();
    return runs.find((r) => r.runKey === runKey);
  }
}
