/** The planner's invocations: one per partition of the config at the time, recorded for owed.ts. */
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import type { HistorySink } from '../../shared/core/history.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import type { TickRecord } from './owed.js';
import { QUIET_LOGGER, short, SWEEP_GRACE_MS } from './world-setup.js';
import type { Stage } from './stage.js';

export class PlannerDriver {
  constructor(readonly stage: Stage) {}

  /**
   * One planner invocation per partition of the current config (`copies` at once). Each is
   * recorded with the config it ran with, its clock and the horizon it reported: what it owes
   * (owed.ts) follows from that, not from what the planner stored.
   */
  async tick(copies = 1): Promise<void> {
    const of = this.stage.partitions;
    const jobs = this.stage.jobs;
    const clock = this.stage.time.clockOf({ skewMs: this.stage.setup.plannerSkewMs });
    const sink = this.stage.sinkFor(this.stage.setup.plannerSkewMs);
    this.stage.say(`tick${copies > 1 ? ` ×${copies}` : ''} (${of} partition(s))`);
    for (let copy = 0; copy < copies; copy++) {
      const ledger = new Ledger(this.stage.plannerClients.doc, { tableName: this.stage.tables.ledger });
      const queue = new RunQueue(this.stage.plannerClients.sqs, this.stage.queues.runQueueUrl);
      const command = this.stage.tickCommands++;
      for (let partition = 0; partition < of; partition++) {
        const seqStart = this.stage.nextSeq();
        const now = clock();
        const record = (outcome: Pick<TickRecord, 'ok' | 'horizon' | 'advanced'>) =>
          this.stage.ticks.push({
            id: this.stage.ticks.length,
            command,
            partition,
            of,
            seqStart,
            seqEnd: this.stage.nextSeq(),
            now,
            jobs,
            ...outcome,
          });
        // A tick that fails after moving its watermark (in its sweep) has planned as a resolved
        // one has: the model must know how far, or it owes slots the planner has rightly passed.
        // One that fails in its watermark write itself (the response lost on every attempt) has
        // put and sent all it planned, and its write may have landed: a job added meanwhile is
        // planned from there on (model seed 20269131), so its horizon bounds the watermark from
        // above, but not from below (`advanced` stays false).
        let planned: number | undefined;
        let planning: number | undefined;
        const tickSink: HistorySink = {
          record: (event) => {
            if (event.type === 'partition-planned') planned = event.plannedUntil;
            else if (event.type === 'partition-planning') planning = event.plannedUntil;
            else sink.record(event);
          },
        };
        const tick = runPlannerTick(
          {
            ledger,
            queue,
            jobs,
            clock,
            logger: QUIET_LOGGER,
            metrics: this.stage.metrics,
            history: tickSink,
            options: { sweepGraceMs: SWEEP_GRACE_MS },
          },
          { partition, of },
        ).then(
          (report) => record({ ok: true, horizon: report.plannedUntil, advanced: report.watermarkAdvanced }),
          (error: unknown) => {
            if (planned !== undefined) record({ ok: true, horizon: planned, advanced: true });
            else if (planning !== undefined) record({ ok: true, horizon: planning, advanced: false });
            else record({ ok: false });
            this.stage.say(`tick ${partition}/${of} failed: ${short(error)}`);
          },
        );
        this.stage.trackUnkillable(tick);
      }
    }
    await this.stage.settleUnlessBatched();
  }
}
