/**
 * `ops resolve <runKey> --as succeeded|dead --reason "…" [--by NAME]`: close a run by hand.
 *
 * Reads the run (consistent) and refuses, exit 1, when it is RUNNING with a live lease or already
 * terminal other than DEAD. Otherwise one conditional update on the status and fencing token it
 * read (and, for RUNNING, the lease still being expired), so a worker that claimed or heartbeated
 * meanwhile wins and the command refuses:
 *   --as succeeded → MANUAL, with resolution { as, reason, by, at, from }; out of the open-runs index;
 *   --as dead      → DEAD, lastError { code: RESOLVED, message: reason }, same resolution record.
 * Either way a message that later arrives for the run is acked as a duplicate.
 */
import type { Ledger } from '../../shared/adapters/ledger.js';
import { resolveRefusal, type LedgerOps, type ResolveAs } from '../../shared/adapters/ledger-ops.js';
import type { Run, RunId } from '../../shared/core/vocabulary.js';
import { noExtraPositionals, parseCommand, parseRunKey, requireOption, stringOption } from './args.js';
import { clockOf, EXIT_OK, OpsFailure, printJson, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const resolveUsage = 'resolve <job@slotISO[#shard]> --as succeeded|dead --reason "…" [--by NAME]';

export interface ResolveRequest {
  readonly id: RunId;
  readonly as: ResolveAs;
  readonly reason: string;
  readonly by: string;
}

export interface ResolveDeps {
  readonly ledger: Pick<Ledger, 'getRun'>;
  readonly ops: Pick<LedgerOps, 'resolveRun' | 'clockSkewMs'>;
  readonly clock: () => number;
}

/** Resolves one run or throws OpsFailure with the one line that says why not. */
export async function resolveRun(deps: ResolveDeps, request: ResolveRequest): Promise<{ before: Run; after: Run }> {
  const label = `${request.id.job}@${new Date(request.id.slot).toISOString()}${request.id.shard ? `#${request.id.shard}` : ''}`;
  const seen = await deps.ledger.getRun(request.id, true);
  if (!seen) throw new OpsFailure(`no run ${label} in the ledger`);
  const now = deps.clock();
  const refusal = resolveRefusal(seen, now, deps.ops.clockSkewMs);
  if (refusal) throw new OpsFailure(`refused: ${refusal}`);
  const result = await deps.ops.resolveRun(seen, { as: request.as, reason: request.reason, by: request.by, at: now });
  if (!result.ok) {
    const current = result.current;
    throw new OpsFailure(
      `refused: ${seen.runKey} changed while resolving (was ${seen.status} token ${seen.fencingToken}, now ${current?.status ?? 'gone'} token ${current?.fencingToken ?? '?'}): read it again with \`ops show\``,
    );
  }
  return { before: seen, after: result.run };
}

export async function resolveCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    as: { type: 'string' },
    reason: { type: 'string' },
    by: { type: 'string' },
  });
  noExtraPositionals(positionals, 1);
  const id = parseRunKey(positionals[0]);
  const as = requireOption(values, 'as');
  if (as !== 'succeeded' && as !== 'dead') throw new UsageError('as', `must be succeeded or dead, got "${as}"`);
  const reason = requireOption(values, 'reason').trim();
  if (reason === '') throw new UsageError('reason', '--reason must say why');
  const by = stringOption(values, 'by') ?? (io.env ?? process.env).USER ?? 'unknown';
  const { before, after } = await withTarget(values, io, (target) =>
    resolveRun({ ledger: target.ledger, ops: target.ops, clock: clockOf(io) }, { id, as, reason, by }),
  );
  if (values.json) {
    printJson(io, { runKey: after.runKey, from: before.status, to: after.status, as, reason, by, fencingToken: after.fencingToken });
    return EXIT_OK;
  }
  io.stdout(`resolved ${after.runKey}: ${before.status} → ${after.status} (as ${as}, by ${by}): ${reason}`);
  return EXIT_OK;
}
