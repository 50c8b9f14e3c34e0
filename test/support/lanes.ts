/**
 * What the lane tests set up alike: a one-minute exclusive job in a Lab, a handler that records
 * the slots it ran and how many ran at once, and a ledger whose first matching request stops at a
 * gate until the test opens it (a worker paused between two of its writes).
 */
import { Ledger } from '../../shared/store/ledger.js';
import type { JobHandler, RunContext } from '../../shared/handler-api.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { clientWith } from './faults.js';
import { testJobs } from './helpers.js';
import { Lab } from './lab.js';
import type { Sandbox } from './stack.js';

/** A Lab with one job `name` under `overlap`: every minute, handler `h`, no start lead, a 30 s lease. */
export function laneLab(box: Sandbox, name: string, overlap: Job['overlap'], handler: JobHandler, now: number): Lab {
  const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s', overlap }], ['h']);
  return new Lab(box, jobs, { h: handler }, now);
}

/**
 * A handler's watch: `ran` the slots it ran, in order, `maxActive` the most runs at once (one
 * holder per lane means 1), `during.run` what the test does inside a run it picks.
 */
export class OverlapWatch {
  private active = 0;
  maxActive = 0;
  readonly ran: number[] = [];
  readonly during: { run?: () => Promise<void> } = {};

  /** The handler, doing `body` inside each run (after the run is counted). */
  handler(body: (ctx: RunContext) => Promise<void>): JobHandler {
    return {
      run: async (ctx) => {
        this.active++;
        this.maxActive = Math.max(this.maxActive, this.active);
        this.ran.push(ctx.slot);
        try {
          await body(ctx);
        } finally {
          this.active--;
        }
      },
    };
  }
}

/** A ledger on its own client whose first request `stops` picks waits at a gate: `reached` settles there, `open()` lets it go on. */
export interface GatedLedger {
  readonly ledger: Ledger;
  readonly reached: Promise<void>;
  open(): void;
  destroy(): void;
}

export function gatedLedger(box: Sandbox, stops: (command: string, input: Record<string, unknown>) => boolean): GatedLedger {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let armed = true;
  const client = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
    if (armed && stops(command, input)) {
      armed = false;
      reach();
      await gate;
    }
    return next();
  });
  return { ledger: new Ledger(client.doc, { tableName: box.endpoints.ledgerTable }), reached, open, destroy: client.destroy };
}

/** The claim's UpdateItem (the only write that sets `claimedFrom`). */
export const isClaim = (command: string, input: Record<string, unknown>): boolean =>
  command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('claimedFrom');
