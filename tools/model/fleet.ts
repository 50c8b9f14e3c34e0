/**
 * The worker containers: the event source mapping's deliveries to them, their invocations of
 * processBatch, and what befalls them (kills, pauses, Lambda timeouts, armed faults).
 */
import { DeleteMessageBatchCommand } from '@aws-sdk/client-sqs';
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { jobsByName } from '../../shared/config.js';
import { PLANNER_SCHEDULE, RUN_QUEUES } from '../../shared/core/resources.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import type { ActorClients } from './actor-io.js';
import type { CallInfo, FaultKind } from './faults.js';
import { modelHandlers } from './handlers.js';
import { HARNESS, MAX_EXTRA_CONTAINERS, QUIET_LOGGER, runKeyIn, short, type Container } from './world-setup.js';
import type { PlannerDriver } from './planner-driver.js';
import type { Stage } from './stage.js';

export class Fleet {
  constructor(
    readonly stage: Stage,
    private readonly driver: PlannerDriver,
  ) {}

  private workerDeps(container: Container, clients: ActorClients, deadline: number): WorkerDeps {
    const clock = this.stage.time.clockOf({ skewMs: container.spec.skewMs });
    const timers = this.stage.time.timersOf(container.actor);
    return {
      ledger: new Ledger(clients.doc, { tableName: this.stage.tables.ledger }),
      queue: new RunQueue(clients.sqs, this.stage.queues.runQueueUrl),
      doc: clients.doc,
      jobs: jobsByName(this.stage.jobs),
      handlers: modelHandlers(
        {
          behaviourFor: (job) => this.stage.behaviourFor(job),
          groupOf: (job) => this.stage.groupOf(job),
          history: this.stage.sinkFor(container.spec.skewMs),
          now: () => this.stage.time.now(),
        },
        container.owner,
        timers,
      ),
      tables: { ledger: this.stage.tables.ledger, payments: this.stage.tables.payments },
      owner: container.owner,
      clock,
      random: this.stage.random,
      logger: QUIET_LOGGER,
      metrics: this.stage.metrics,
      history: this.stage.sinkFor(container.spec.skewMs),
      remainingTimeMs: () => deadline - this.stage.time.now(),
      timers,
      options: { clockSkewMs: this.stage.setup.clockAllowanceMs },
    };
  }

  /**
   * The event source mapping hands a batch of due messages to container `index` (a Lambda container:
   * thawed if it was frozen between invocations, started afresh if it was killed). `duplicateTo`
   * hands a copy of the batch's first message to a second container at the same time.
   */
  async deliver(index: number, duplicateTo?: number): Promise<void> {
    const container = this.stage.container(index);
    if (container.busy) return;
    await this.stage.queue.pull();
    const records = await this.stage.queue.take(container.spec.batchSize);
    if (records.length === 0) return;
    await this.invoke(container, records);
    if (duplicateTo !== undefined) {
      const other = this.stage.container(duplicateTo);
      if (other !== container && !other.busy) await this.invoke(other, [this.stage.queue.duplicateOf(records[0]!)]);
    }
    await this.stage.settleUnlessBatched();
  }

  /**
   * Time runs on for `ms` as in production, faults and scripted behaviours still on: the planner
   * ticks at every whole minute, and every due message goes to a free container as the event source
   * mapping would hand it out (a busy, paused or killed container takes nothing; a killed one starts a
   * fresh container). Most runs of a scenario execute here, under the faults armed so far.
   */
  async runFor(ms: number): Promise<void> {
    const minute = PLANNER_SCHEDULE.tickMs;
    const end = this.stage.time.now() + ms;
    let nextTick = Math.ceil(this.stage.time.now() / minute) * minute;
    for (let round = 0; round < 10_000 && this.stage.time.now() < end; round++) {
      if (this.stage.time.now() >= nextTick) {
        await this.driver.tick();
        nextTick += minute;
      }
      await this.stage.queue.pull();
      for (let i = 0; i < this.stage.containers.length && this.stage.queue.hasDue(); i++) {
        const container = this.stage.containers[i]!;
        if (!container.busy && !container.paused) await this.deliver(i);
      }
      await this.stage.settle();
      // As in quiescence: a message sent while settling is due now, not at the next tick.
      await this.stage.queue.pull();
      const candidates = [nextTick, this.stage.queue.nextVisibleAt(), this.stage.time.nextTimerAt()].filter(
        (t): t is number => t !== undefined,
      );
      const next = Math.max(this.stage.time.now() + 1, Math.min(...candidates));
      await this.stage.time.advanceTo(Math.min(next, end), () => this.stage.settle());
    }
  }

  /**
   * Lets time run on to the next message that becomes visible (within `withinMs`), then delivers
   * to container `index`: runs execute while the fault phase lasts, under its faults and scripted
   * behaviours, rather than only once quiescence delivers everything.
   */
  async deliverNext(index: number, withinMs: number): Promise<void> {
    if (this.stage.container(index).busy) return;
    await this.stage.queue.pull();
    const next = this.stage.queue.nextVisibleAt();
    if (!this.stage.queue.hasDue() && next !== undefined && next - this.stage.time.now() <= withinMs)
      await this.stage.time.advanceTo(next, () => this.stage.settle());
    await this.deliver(index);
  }

  private async invoke(container: Container, records: QueueRecord[]): Promise<void> {
    if (this.stage.time.state(container.actor) === 'dead' || !container.clients) {
      container.clients?.destroy();
      container.generation++;
      container.actor = `${container.name}#${container.generation}`;
      container.clients = this.stage.clientsFor(container.actor, container.spec.sdkAttempts);
    }
    container.invocations++;
    container.owner = `${container.name}.${container.invocations}`;
    container.busy = true;
    container.held = records.map((r) => runKeyIn(r.body));
    this.stage.say(
      `${container.owner} receives ${container.held.map((k, i) => `${k}${records[i]!.attributes?.ApproximateReceiveCount !== '1' ? ` (receive ${records[i]!.attributes?.ApproximateReceiveCount})` : ''}`).join(', ')}`,
    );
    // Lambda thaws the container: timers of earlier invocations (zombies) run again.
    this.stage.time.setState(container.actor, 'running');
    await this.stage.time.fireOverdue(container.actor, () => this.stage.settle());
    const actor = container.actor;
    const clients = container.clients;
    const deadline = this.stage.time.now() + RUN_QUEUES.workerTimeoutSeconds * 1000;
    const owner = container.owner;
    // The Lambda service ends an invocation that outlives its timeout (the container dies).
    const timeoutTimer = this.stage.time.timersOf(HARNESS).setTimeout(() => {
      if (container.busy && container.owner === owner) {
        this.stage.say(`${owner}: Lambda timeout, container killed`);
        this.kill(this.stage.containers.indexOf(container));
      }
    }, deadline - this.stage.time.now());
    const deps = this.workerDeps(container, clients, deadline);
    const invocation = processBatch(deps, records)
      .then(async (result) => {
        const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
        const done = records.filter((r, i) => !failed.has(r.messageId) && records.findIndex((o) => o.messageId === r.messageId) === i);
        if (done.length > 0 && this.stage.time.state(actor) !== 'dead') {
          // The event source mapping deletes what the invocation reported done.
          await clients.sqs
            .send(
              new DeleteMessageBatchCommand({
                QueueUrl: this.stage.queues.runQueueUrl,
                Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
              }),
            )
            .catch((error: unknown) => this.stage.say(`${owner}: delete failed: ${short(error)}`));
        }
      })
      .catch((error: unknown) => this.stage.say(`${owner}: invocation failed: ${short(error)}`))
      .finally(() => {
        this.stage.time.timersOf(HARNESS).clearTimeout(timeoutTimer);
        if (container.owner === owner && container.actor === actor) {
          container.busy = false;
          container.held = [];
          // Between invocations Lambda freezes the container: nothing of it runs until the next one.
          this.stage.time.setState(actor, 'frozen');
        }
      });
    this.stage.track(invocation);
  }

  /** The container dies at once (SIGKILL, OOM, Lambda timeout); its next delivery starts a fresh one. */
  kill(index: number): void {
    const container = this.stage.container(index);
    if (this.stage.time.state(container.actor) === 'dead') return;
    if (container.busy) {
      this.stage.disturbed(container.actor, 'killed');
      this.stage.say(`${container.owner} killed`);
    }
    this.stage.time.setState(container.actor, 'dead');
    container.busy = false;
    container.held = [];
    for (const resolve of this.stage.holds.get(container.actor) ?? []) resolve();
    this.stage.holds.delete(container.actor);
  }

  /** The container stops for `ms` of virtual time (a GC pause, SIGSTOP, a slow host). */
  async pause(index: number, ms: number): Promise<void> {
    const container = this.stage.container(index);
    if (!container.busy || this.stage.time.state(container.actor) !== 'running') return;
    this.stage.disturbed(container.actor, 'paused');
    this.stage.say(`${container.owner} paused for ${Math.round(ms / 1000)} s`);
    const actor = container.actor;
    this.stage.time.setState(actor, 'frozen');
    container.paused = true;
    this.stage.time.timersOf(HARNESS).setTimeout(() => {
      if (this.stage.time.state(actor) !== 'frozen' || !container.paused) return;
      container.paused = false;
      this.thaw(container);
    }, ms);
    await this.stage.settleUnlessBatched();
  }

  thaw(container: Container): void {
    this.stage.time.setState(container.actor, 'running');
    this.stage.say(`${container.owner} resumes`);
    for (const resolve of this.stage.holds.get(container.actor) ?? []) resolve();
    this.stage.holds.delete(container.actor);
    const actor = container.actor;
    this.stage.track(this.stage.time.fireOverdue(actor, () => this.stage.settle()));
  }

  /** Every due message to a free container; when all are busy, to a fresh container (Lambda scales out). */
  async deliverAllDue(): Promise<void> {
    for (let i = 0; i < this.stage.containers.length && this.stage.queue.hasDue(); i++)
      if (!this.stage.container(i).busy) await this.deliver(i);
    while (this.stage.queue.hasDue()) {
      let container = this.stage.extraContainers.find((l) => !l.busy);
      if (!container) {
        if (this.stage.extraContainers.length >= MAX_EXTRA_CONTAINERS) return;
        const name = `q${this.stage.extraContainers.length}`;
        container = {
          name,
          spec: { skewMs: 0, sdkAttempts: 3, batchSize: 10 },
          generation: 0,
          actor: `${name}#0`,
          busy: false,
          invocations: 0,
          owner: '',
          held: [],
          paused: false,
        };
        this.stage.extraContainers.push(container);
      }
      const records = await this.stage.queue.take(container.spec.batchSize);
      if (records.length === 0) return;
      await this.invoke(container, records);
    }
  }

  armFault(
    containerOrActor: number | 'planner' | 'ops',
    kind: CallInfo['kind'],
    fault: FaultKind,
    count: number,
    latencyMs?: number,
  ): void {
    const actor = typeof containerOrActor === 'number' ? this.stage.container(containerOrActor).actor : containerOrActor;
    this.stage.faults.arm({ actor, kind, fault, count, latencyMs });
  }

  /** Arms a fault for container `index` in whichever generation it runs next (one started after a kill too). */
  armContainerFault(index: number, kind: CallInfo['kind'], fault: FaultKind, count: number, latencyMs?: number): void {
    const container = this.stage.container(index);
    for (let g = container.generation; g <= container.generation + 2; g++)
      this.stage.faults.arm({ actor: `${container.name}#${g}`, kind, fault, count, latencyMs });
  }
}
