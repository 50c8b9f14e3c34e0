/**
 * `ops redrive [--max-per-second 10] [--dry-run] [--by NAME]`: send the DLQ's messages back to the
 * run queue, after giving their DEAD runs a fresh attempt budget; `ops redrive --drop MESSAGE_ID`:
 * delete one junk message. The use cases are shared/operations/redrive.ts; this file parses the
 * command and prints their reports.
 */
import { DeadLetterQueueError } from '../../shared/messaging/dead-letter-queue.js';
import { dropMessage, redrive } from '../../shared/operations/redrive.js';
import { jobsOf, noExtraPositionals, type CommonValues, operatorOf, parseCommand, parsePositive, stringOption } from './args.js';
import { cell, EXIT_OK, OpsFailure, printJson, printTable, UsageError, clockOf, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const redriveUsage = 'redrive [--max-per-second 10] [--dry-run] [--by NAME] | redrive --drop MESSAGE_ID [--dry-run]';

/** A DLQ that would not take its messages back is the command's failure: its one line, exit 1. */
async function dlqFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DeadLetterQueueError) throw new OpsFailure(error.message);
    throw error;
  }
}

async function dropCommand(values: CommonValues & Record<string, unknown>, messageId: string, io: OpsIo): Promise<number> {
  const dryRun = values['dry-run'] === true;
  const jobs = jobsOf(io);
  const outcome = await dlqFailure(() =>
    withTarget(values, io, (target) =>
      dropMessage({ sqs: target.clients.sqs, jobs, deadLetterQueueUrl: target.deadLetterQueueUrl }, messageId, { dryRun }),
    ),
  );
  if (!outcome.ok)
    throw new OpsFailure(
      `no message ${messageId} in the DLQ (${outcome.seen} message(s) seen): nothing deleted; \`redrive --dry-run\` lists their ids`,
    );
  const { dropped } = outcome;
  if (values.json) {
    printJson(io, dropped);
    return EXIT_OK;
  }
  const what = dropped.runKey !== undefined ? `run message of ${dropped.runKey}` : `not a run message (${dropped.notARun})`;
  const received = dropped.receiveCount === undefined ? '' : `, received ${dropped.receiveCount} time(s)`;
  io.stdout(
    `${dropped.deleted ? 'deleted' : 'dry run: would delete'} DLQ message ${messageId}: ${what}${received}; body: ${cell(dropped.body, 200)}`,
  );
  if (dropped.deleted && dropped.runKey !== undefined)
    io.stdout(`the run itself is unchanged: \`show ${dropped.runKey}\`; \`retry\` or \`resolve\` it if it still needs a person`);
  return EXIT_OK;
}

export async function redriveCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    'max-per-second': { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    by: { type: 'string' },
    drop: { type: 'string' },
  });
  noExtraPositionals(positionals, 0);
  const drop = stringOption(values, 'drop');
  if (drop !== undefined) {
    if (drop.trim() === '') throw new UsageError('drop', '--drop takes the id of one DLQ message (`redrive --dry-run` lists them)');
    for (const other of ['max-per-second', 'by'])
      if (values[other] !== undefined)
        throw new UsageError(other, `--${other} does not apply to --drop (it deletes one message and revives nothing)`);
    return dropCommand(values, drop.trim(), io);
  }
  const maxPerSecond = parsePositive(stringOption(values, 'max-per-second'), 'max-per-second', 10, { integer: true, max: 500 });
  const by = operatorOf(values, io);
  const jobs = jobsOf(io);
  const report = await dlqFailure(() =>
    withTarget(values, io, (target) =>
      redrive(
        {
          sqs: target.clients.sqs,
          ledger: target.ledger,
          ops: target.ops,
          jobs,
          deadLetterQueueUrl: target.deadLetterQueueUrl,
          deadLetterQueueArn: target.deadLetterQueueArn,
          runQueueArn: target.runQueueArn,
          clock: clockOf(io),
        },
        { maxPerSecond, dryRun: values['dry-run'] === true, by },
      ),
    ),
  );
  if (values.json) {
    printJson(io, report);
    return EXIT_OK;
  }
  if (report.messages === 0) {
    io.stdout('DLQ is empty: nothing to redrive');
    return EXIT_OK;
  }
  printTable(
    io,
    ['MESSAGE', 'RUN KEY', 'STATUS', 'ACTION', 'DETAIL'],
    report.entries.map((e) => [e.messageId, e.runKey, e.status, e.action, e.detail]),
  );
  io.stdout(
    `${report.dryRun ? 'dry run: ' : ''}${report.messages} message(s): ${report.revived} revived, ${report.skippedSucceeded} skipped (succeeded), ` +
      `${report.skippedTerminal} skipped (other terminal), ${report.open} still open, ${report.changed} changed meanwhile, ${report.unknown} unknown`,
  );
  if (report.taskHandle) io.stdout(`move task started at ${report.maxPerSecond} msg/s: ${report.taskHandle}`);
  if (report.unknown > 0) io.stdout(`note: ${report.unknown} unknown message(s) will return to the DLQ after maxReceiveCount receives`);
  return EXIT_OK;
}
