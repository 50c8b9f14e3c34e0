/**
 * The bench's CPU profile (tools/bench/cpu-profile.ts): self time is put where the code lives, so
 * a run's Node CPU splits into the scheduler's code, the SDK, the SQS emulator and Node itself.
 */
import { describe, expect, it } from 'vitest';
import { categoryOf, startCpuProfile } from '../../tools/bench/cpu-profile.js';

describe('bench CPU profile', () => {
  it.each([
    ['file:///work/x/node_modules/@smithy/core/dist-cjs/index.js', 'f', 'AWS SDK (@aws-sdk, @smithy)'],
    ['file:///work/x/node_modules/@aws-sdk/client-dynamodb/dist-cjs/index.js', 'f', 'AWS SDK (@aws-sdk, @smithy)'],
    ['file:///work/x/node_modules/local-aws-sqs/dist/index.js', 'f', 'SQS emulator (local-aws-sqs)'],
    ['file:///work/x/shared/adapters/ledger.ts', 'claim', 'scheduler code (shared/)'],
    ['file:///work/x/tools/bench/key-load.ts', 'f', 'bench meters (tools/bench/)'],
    ['file:///work/x/tools/local-poller.ts', 'f', 'local stand-ins (tools/: poller, stack)'],
    ['node:_http_client', 'f', 'node http, sockets, streams'],
    ['node:internal/timers', 'f', 'node core (timers, events, other)'],
    ['', '(garbage collector)', 'garbage collection'],
    ['', '(idle)', 'idle (waiting on I/O, timers)'],
    // A package that happens to contain "shared" in its path is still that package's.
    ['file:///work/x/node_modules/zod/shared/index.js', 'f', 'other packages (zod)'],
  ])('%s %s is counted as %s', (url, fn, category) => {
    expect(categoryOf(url, fn)).toBe(category);
  });

  it('a profile around busy work reports sampled time and the functions that took it', async () => {
    const stop = await startCpuProfile();
    let x = 0;
    const until = performance.now() + 100;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    const summary = await stop();
    expect(x).toBeGreaterThan(0);
    expect(summary.sampledMs).toBeGreaterThan(0);
    const total = Object.values(summary.selfMs).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(summary.sampledMs * 1.05 + 5);
    expect(summary.top.length).toBeGreaterThan(0);
  });
});
