/**
 * Where the bench process's CPU goes during a burst: a V8 CPU profile of this process (the main
 * thread: planner and worker code, the SDK, the in-process local SQS server, the bench's own
 * meters), taken with the inspector only when asked for (`npm run bench -- --cpu-profile`), since
 * sampling slows the burst it measures. Self time is grouped by where the code lives, so a run's
 * Node CPU splits into the scheduler's code, the AWS SDK, the SQS emulator, Node's HTTP and
 * sockets, garbage collection and the bench's meters. What DynamoDB Local spends is measured
 * apart (its JVM's CPU from /proc, measure.ts).
 */
import { writeFileSync } from 'node:fs';
import type { Profiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';

/** Self time (ms) per category, and the sampled span. */
export interface CpuProfileSummary {
  readonly sampledMs: number;
  /** Main-thread ms per category, idle included (the thread waiting on I/O or timers). */
  readonly selfMs: Readonly<Record<string, number>>;
  /** The heaviest functions by self time, for the notes. */
  readonly top: readonly { readonly name: string; readonly where: string; readonly ms: number }[];
}

/** The category of a function by its script's URL (V8's pseudo-frames by name). */
export function categoryOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(idle)') return 'idle (waiting on I/O, timers)';
    if (functionName === '(garbage collector)') return 'garbage collection';
    if (functionName === '(program)') return 'V8 and native (outside JS)';
    return 'native';
  }
  if (url.startsWith('node:'))
    return url.startsWith('node:internal/http') ||
      url.startsWith('node:_http') ||
      url === 'node:http' ||
      url.startsWith('node:internal/streams') ||
      url === 'node:net' ||
      url.startsWith('node:internal/stream_base')
      ? 'node http, sockets, streams'
      : 'node core (timers, events, other)';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
  if (pkg) {
    if (pkg === 'local-aws-sqs') return 'SQS emulator (local-aws-sqs)';
    if (pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/') || pkg.startsWith('@aws-crypto/')) return 'AWS SDK (@aws-sdk, @smithy)';
    if (pkg === 'tsx' || pkg === 'esbuild') return 'tsx loader';
    return `other packages (${pkg})`;
  }
  if (url.includes('/shared/')) return 'scheduler code (shared/)';
  if (url.includes('/tools/bench/')) return 'bench meters (tools/bench/)';
  if (url.includes('/tools/')) return 'local stand-ins (tools/: poller, stack)';
  return 'other';
}

function summarize(profile: Profiler.Profile): CpuProfileSummary {
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time from sample i-1 to sample i: sample i ran for timeDeltas[i + 1].
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + us);
  }
  const selfMs: Record<string, number> = {};
  const fns = new Map<string, { name: string; where: string; ms: number }>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const category = categoryOf(url, functionName);
    selfMs[category] = (selfMs[category] ?? 0) + us / 1000;
    const where = url === '' ? '' : `${url.replace(/^.*\/(node_modules|shared|tools)\//, '$1/')}:${lineNumber + 1}`;
    const key = `${functionName}@${where}`;
    const entry = fns.get(key) ?? { name: functionName || '(anonymous)', where, ms: 0 };
    entry.ms += us / 1000;
    fns.set(key, entry);
  }
  const top = [...fns.values()]
    .filter((f) => !f.name.startsWith('(idle'))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 15);
  return { sampledMs: (profile.endTime - profile.startTime) / 1000, selfMs, top };
}

/** Starts sampling this process; the returned function stops it, writes the raw profile to `path` (if given) and summarizes it. */
export async function startCpuProfile(path?: string, intervalUs = 250): Promise<() => Promise<CpuProfileSummary>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    if (path) writeFileSync(path, JSON.stringify(profile));
    return summarize(profile);
  };
}
