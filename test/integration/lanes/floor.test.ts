/**
 * Review (adversarial): the forbid-queue floor. A holder's look reads the lane from its floor,
 * passes ≥ 8 ended runs and raises the floor with `advanceFloor`, conditional on nobody having
 * written the marker since its release (`lastWrite`). A run created (backfill, planner catch-up)
 * or revived (`ops retry`, `ops redrive`) between the look's read and that write, at a slot at or
 * above the current floor (or with no floor yet), calls `lowerFloor`, whose condition
 * `floor > :slot` fails: it writes nothing, so `lastWrite` is unchanged and the floor is raised
 * past the new open run. No look finds it again and no order check sees it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../shared/store/ledger.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { clientWith } from '../../support/faults.js';
import { laneLab, OverlapWatch } from '../../support/lanes.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('review: a floor raised past an open run', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it("forbid-queue: a run created 5 min back while the holder's look raises the floor (between its read and its advanceFloor) is still run before the next slot and handed the lane without the sweeper", async () => {
    const name = uniqueName('review-floor');
    // History: nine ended runs (run elsewhere), then the holder H at T0.
    const { lab, ran } = await floorLab(box, name);
    await lab.create(name, T0);
    const S = T0 - 5 * MIN;
    // H's worker: its look passed the ended runs; just before its advanceFloor lands, a backfill
    // (or ops retry) creates S and lowers the floor to it, after its put, as designed.
    const race = createOnFloorWrite(box, () => lab.create(name, S));
    const { racing } = race;
    try {
      expect(await lab.deliver(name, T0, 'holder', { ledger: new Ledger(racing.doc, { tableName: box.endpoints.ledgerTable }) })).toBe(
        'ack',
      );
    } finally {
      racing.destroy();
    }
    const createdS = race.created();
    expect(createdS).toBe(true);
    expect(ran).toEqual([T0]);
    // The floor must not lie above an open run.
    const floor = (await box.ledger.lanes.read(name, 0))?.floor;
    expect({ floor, s: S, floorAboveOpenRun: floor !== undefined && floor > S }).toMatchObject({ floorAboveOpenRun: false });
  });

  it('forbid-queue: consequence: the next slot runs before the older open run S, and S, whose message came while the lane was held, is left READY with no message while the lane is idle', async () => {
    const name = uniqueName('review-floor-strand');
    const { lab, ran, during } = await floorLab(box, name);
    await lab.create(name, T0);
    await lab.create(name, T0 + MIN);
    const S = T0 - 5 * MIN;
    const race = createOnFloorWrite(box, () => lab.create(name, S));
    const { racing } = race;
    try {
      expect(await lab.deliver(name, T0, 'holder', { ledger: new Ledger(racing.doc, { tableName: box.endpoints.ledgerTable }) })).toBe(
        'ack',
      );
    } finally {
      racing.destroy();
    }
    const createdS = race.created();
    expect(createdS).toBe(true);
    // The next slot's own message arrives at its fire time; S's message (sent by its creator
    // after the floor write) arrives while that run holds the lane.
    lab.clock.now = T0 + MIN + 10;
    during.run = async () => {
      expect(await lab.deliver(name, S, 'other')).toBe('ack');
    };
    expect(await lab.deliver(name, T0 + MIN)).toBe('ack');
    // Whatever the holders sent is delivered (no sweeper).
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    // Slot order among runs that exist: S existed before T0 + 1 min started.
    expect({ ran, s: await lab.status(name, S) }).toEqual({ ran: [T0, S, T0 + MIN], s: RunStatus.SUCCEEDED });
  });
});

/**
 * A forbid-queue lane whose handler records the slots it ran and runs `during.run` inside
 * T0 + 1 min, with nine ended runs (20 to 12 min back, run elsewhere) below its floor's reach.
 */
async function floorLab(box: Sandbox, name: string) {
  const watch = new OverlapWatch();
  const { ran, during } = watch;
  const lab = laneLab(
    box,
    name,
    'forbid-queue',
    watch.handler(async (ctx) => {
      if (ctx.slot === T0 + MIN) await during.run?.();
    }),
    T0 + 10,
  );
  for (let k = 20; k >= 12; k--) {
    await lab.create(name, T0 - k * MIN);
    const claim = await box.ledger.claim(lab.id(name, T0 - k * MIN), 'elsewhere', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed' || !(await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok)
      throw new Error('setup');
  }
  return { lab, ran, during };
}

/** A client on which, just before the first floor write lands, `create` runs (a backfill or ops retry racing the look). */
function createOnFloorWrite(box: Sandbox, create: () => Promise<unknown>) {
  let created = false;
  const racing = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
    if (!created && command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET floor = :floor')) {
      created = true;
      await create();
    }
    return next();
  });
  return { racing, created: () => created };
}
