/**
 * The planner's dispatch: the order a tick puts its runs in (slotTasks) and the order it sends
 * their messages in (OrderedDispatch), while later puts are still in flight.
 */
import { SEND_BATCH_SIZE, type OutgoingRun, type RunQueue } from '../messaging/run-queue.js';
import type { PlannedRun } from '../core/plan.js';

/**
 * The plan's runs as put tasks: each slot's runs (plan indices, shard 0 first) form one group; a
 * group is one task, except that a `maxRuns` job's groups form a single task, oldest slot first,
 * whose slots are counted one after another. Tasks keep the plan's order of their first run.
 */
export function slotTasks(runs: readonly PlannedRun[]): number[][][] {
  const groups = new Map<string, number[]>();
  runs.forEach((run, index) => {
    const key = `${run.job.name}\u0000${run.slot}`;
    const group = groups.get(key);
    if (group) group.push(index);
    else groups.set(key, [index]);
  });
  const tasks: number[][][] = [];
  const counted = new Map<string, number[][]>();
  for (const group of groups.values()) {
    group.sort((a, b) => runs[a]!.shard - runs[b]!.shard);
    const job = runs[group[0]!]!.job;
    if (job.maxRuns === undefined) {
      tasks.push([group]);
      continue;
    }
    let task = counted.get(job.name);
    if (!task) {
      counted.set(job.name, (task = []));
      tasks.push(task);
    }
    task.push(group);
  }
  for (const task of counted.values()) task.sort((a, b) => runs[a[0]!]!.slot - runs[b[0]!]!.slot);
  return tasks;
}

/**
 * Sends the runs a tick created while its later puts are still in flight. A batch leaves as soon
 * as the next 10 runs *in plan order* are known, so a tick of thousands of runs costs its puts
 * plus one batch, not its puts plus every batch, and on-time runs (planned before catch-up runs)
 * never queue behind a catch-up run whose put happened to finish first. Batches stay full (10
 * messages per call) except the last, so the SQS request count is what sending at the end cost.
 */
export class OrderedDispatch {
  /** Per plan index: undefined = put pending, null = nothing to send, else the message. */
  private readonly settled: (OutgoingRun | null | undefined)[];
  private cursor = 0;
  private buffer: OutgoingRun[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private sentCount = 0;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly queue: Pick<RunQueue, 'send'>,
    size: number,
    private readonly concurrency: number,
    private readonly onSent: (runs: readonly OutgoingRun[]) => void,
  ) {
    this.settled = new Array<OutgoingRun | null | undefined>(size);
  }

  /** Records plan entry `index`; waits when `concurrency` batches are already in flight (backpressure on the puts). */
  async settle(index: number, run: OutgoingRun | undefined): Promise<void> {
    this.settled[index] = run ?? null;
    while (this.cursor < this.settled.length && this.settled[this.cursor] !== undefined) {
      const next = this.settled[this.cursor++];
      if (next) this.buffer.push(next);
      if (this.buffer.length === SEND_BATCH_SIZE) this.flush();
    }
    while (this.inFlight.size >= Math.max(1, this.concurrency)) await Promise.race(this.inFlight);
  }

  /** Sends what is left and resolves with the number of messages sent; rethrows the first refused send. */
  async finish(): Promise<number> {
    if (this.buffer.length > 0) this.flush();
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure.error;
    return this.sentCount;
  }

  private flush(): void {
    const batch = this.buffer;
    this.buffer = [];
    const sending: Promise<void> = this.queue.send(batch).then(
      () => {
        this.sentCount += batch.length;
        this.onSent(batch);
      },
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    const tracked = sending.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
