/**
 * `ops retry <runKey>` or `ops retry --job J [--state DEAD] [--since 24h] [--until ISO] [--limit 100]`:
 * run ended runs again after their cause is fixed. DEAD runs (by default; SKIPPED or SUPERSEDED
 * ones on request) get a fresh attempt budget and a new message now:
 * - a run whose last attempt's result is unknown (it ended UNKNOWN or timed out, or its worker
 *   vanished) restarts UNKNOWN: its next claim calls the handler's reconcile first, so an effect
 *   that did land is not applied twice;
 * - every other run restarts READY.
 * Its message is sent now, or, for a run whose fire time is still ahead, delayed to it.
 * Failing runs are acked and recorded DEAD in the ledger, never left in the DLQ, so this (not
 * `redrive`) is how they run again. Each revival is conditional on the status and token read: a run
 * that changed meanwhile is reported, not touched. `--dry-run` lists what would be revived.
 * The use case is shared/operations/retry.ts; this file parses the command and prints its entries.
 */
import { RETRYABLE_STATES, retry } from '../../shared/operations/retry.js';
import { RunStatus, type RunId } from '../../shared/core/vocabulary.js';
import {
  configuredJob,
  noExtraPositionals,
  operatorOf,
  parseCommand,
  parseInstant,
  parsePositive,
  parseRunKey,
  parseSince,
  parseStatuses,
  stringOption,
  RUN_FILTER_OPTIONS,
} from './args.js';
import { clockOf, EXIT_FAILURE, EXIT_OK, OpsFailure, printJson, printTable, UsageError, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const retryUsage =
  'retry (<job@slotISO[#shard]> | --job NAME [--state DEAD[,SKIPPED,SUPERSEDED]] [--since ISO|24h] [--until ISO] [--limit 100]) [--dry-run] [--by NAME]';

export async function retryCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    ...RUN_FILTER_OPTIONS,
    'dry-run': { type: 'boolean', default: false },
    by: { type: 'string' },
  });
  noExtraPositionals(positionals, 1);
  const now = clockOf(io)();
  const states = parseStatuses(stringOption(values, 'state')) ?? [RunStatus.DEAD];
  const wrong = states.find((s) => !RETRYABLE_STATES.includes(s));
  if (wrong) throw new UsageError('state', `a retry revives ended runs: one of ${RETRYABLE_STATES.join(', ')}, got "${wrong}"`);
  const by = operatorOf(values, io);
  const single: RunId | undefined = positionals[0] === undefined ? undefined : parseRunKey(positionals[0]);
  const jobName = stringOption(values, 'job');
  if (!single && !jobName) throw new UsageError('runKey', 'give a run key, or --job NAME to retry its DEAD runs');
  if (single && jobName) throw new UsageError('job', 'give a run key or --job, not both');
  const job = configuredJob(io, single?.job ?? jobName);
  const sinceRaw = stringOption(values, 'since');
  const untilRaw = stringOption(values, 'until');
  const limit = parsePositive(stringOption(values, 'limit'), 'limit', 100, { integer: true, max: 10_000 });
  const outcome = await withTarget(values, io, (target) =>
    retry(
      { ledger: target.ledger, ops: target.ops, queue: target.queue, clock: clockOf(io) },
      job,
      single
        ? { run: single }
        : {
            statuses: states,
            sinceSlot: sinceRaw === undefined ? undefined : parseSince(sinceRaw, now, 'since'),
            untilSlot: untilRaw === undefined ? undefined : parseInstant(untilRaw, 'until'),
            limit,
          },
      { dryRun: values['dry-run'] === true, by },
    ),
  );
  if (!outcome.ok) throw new OpsFailure(`no run ${positionals[0]} in the ledger`);
  const { entries } = outcome;
  if (values.json) {
    printJson(io, entries);
  } else if (entries.length === 0) {
    io.stdout(`no ${states.join('/')} runs of ${job.name} to retry`);
  } else {
    printTable(
      io,
      ['RUN KEY', 'WAS', 'NOW', 'ACTION', 'DETAIL'],
      entries.map((e) => [e.runKey, e.from, e.to, e.action, e.detail]),
    );
  }
  return single && entries.some((e) => e.action === 'refused' || e.action === 'changed') ? EXIT_FAILURE : EXIT_OK;
}
