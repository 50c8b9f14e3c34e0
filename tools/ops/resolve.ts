/**
 * `ops resolve <runKey> --as succeeded|dead --reason "…" [--by NAME] [--force]`: close a run by
 * hand (shared/operations/resolve.ts), and print what it came to.
 *
 * Reads the run (consistent) and refuses, exit 1, when it is already terminal other than DEAD,
 * or RUNNING with a lease not past its end by the takeover margin (60 s) on this machine's clock:
 * an operator's clock is not a worker's. `--force` takes over a RUNNING run anyway. Otherwise one
 * conditional update on the status and fencing token it read (a worker that claimed meanwhile
 * wins and the command refuses); a RUNNING run's fence advances, so its old holder, if alive, has
 * every heartbeat and outcome refused and stops:
 *   --as succeeded → MANUAL, with resolution { as, reason, by, at, from }; out of the watch index;
 *   --as dead      → DEAD, lastError { code: RESOLVED, message: reason }, same resolution record.
 * Either way a message that later arrives for the run is acked as a duplicate, and for an
 * exclusive job the lane is freed and its next waiting run dispatched.
 */
import { laneHandOn, resolve, type ResolveDeps, type ResolveRequest } from '../../shared/operations/resolve.js';
import type { Run } from '../../shared/core/vocabulary.js';
import { jobsOf, noExtraPositionals, operatorOf, parseCommand, parseRunKey, requireOption } from './args.js';
import { clockOf, EXIT_OK, OpsFailure, printJson, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const resolveUsage = 'resolve <job@slotISO[#shard]> --as succeeded|dead --reason "…" [--by NAME] [--force]';

/** Resolves one run (shared/operations/resolve.ts) or throws OpsFailure with the one line that says why not (exit 1). */
export async function resolveRun(deps: ResolveDeps, request: ResolveRequest): Promise<{ before: Run; after: Run }> {
  const outcome = await resolve(deps, request);
  if (!outcome.ok) throw new OpsFailure(outcome.message);
  return { before: outcome.before, after: outcome.after };
}

export async function resolveCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    as: { type: 'string' },
    reason: { type: 'string' },
    by: { type: 'string' },
    force: { type: 'boolean', default: false },
  });
  noExtraPositionals(positionals, 1);
  const id = parseRunKey(positionals[0]);
  const as = requireOption(values, 'as');
  if (as !== 'succeeded' && as !== 'dead') throw new UsageError('as', `must be succeeded or dead, got "${as}"`);
  const reason = requireOption(values, 'reason').trim();
  if (reason === '') throw new UsageError('reason', '--reason must say why');
  const by = operatorOf(values, io);
  const jobs = jobsOf(io);
  const { before, after } = await withTarget(values, io, (target) =>
    resolveRun(
      { ledger: target.ledger, ops: target.ops, clock: clockOf(io), handOn: laneHandOn(target.ledger, target.queue, jobs, clockOf(io)) },
      { id, as, reason, by, force: values.force === true },
    ),
  );
  if (values.json) {
    printJson(io, { runKey: after.runKey, from: before.status, to: after.status, as, reason, by, fencingToken: after.fencingToken });
    return EXIT_OK;
  }
  io.stdout(`resolved ${after.runKey}: ${before.status} → ${after.status} (as ${as}, by ${by}): ${reason}`);
  return EXIT_OK;
}
