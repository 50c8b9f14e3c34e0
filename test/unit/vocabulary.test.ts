/**
 * The run statuses split three ways, and every status is in exactly one part: terminal (never
 * left by itself), held (RUNNING, under a lease) or waiting for its next claim. A status in two
 * parts, or in none, is a run the sweeper and the model would judge twice or never.
 */
import { describe, expect, it } from 'vitest';
import { isTerminal, isWaiting, RunStatus } from '../../shared/core/vocabulary.js';

describe('run statuses', () => {
  it('every status is exactly one of terminal, held (RUNNING) or waiting', () => {
    for (const status of Object.values(RunStatus)) {
      const parts = [isTerminal(status), status === RunStatus.RUNNING, isWaiting(status)].filter(Boolean);
      expect(parts, status).toHaveLength(1);
    }
  });

  it('waiting is READY, RETRY and UNKNOWN: the statuses a claim takes without a takeover', () => {
    expect(Object.values(RunStatus).filter(isWaiting)).toEqual([RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN]);
    expect(Object.values(RunStatus).filter(isTerminal)).toEqual([
      RunStatus.SUCCEEDED,
      RunStatus.DEAD,
      RunStatus.SKIPPED,
      RunStatus.SUPERSEDED,
      RunStatus.MANUAL,
    ]);
  });
});
