/** Run fixtures for the unit tests: one job `j`, one shard, built from its slot. */
import { initialFence } from '../../shared/core/fence.js';
import { RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

/** A READY run of job `j` at `slot` (shard 0 of 1), never claimed, created a minute before its slot; `overrides` what the test changes. */
export function runAt(slot: number, overrides: Partial<Run> = {}): Run {
  return {
    job: 'j',
    slot,
    shard: 0,
    shards: 1,
    runKey: runKeyOf('j', slot, 0, 1),
    status: RunStatus.READY,
    fencingToken: initialFence(slot),
    attempt: 0,
    createdAt: slot - 60_000,
    ...overrides,
  };
}
