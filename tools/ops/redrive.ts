/**
 * `ops redrive [--max-per-second 10] [--dry-run] [--by NAME]`: send the DLQ's messages back to the
 * run queue, after giving their DEAD runs a fresh attempt budget.
 *
 * 1. Receive every DLQ message (hidden for the duration), parse it as a run message, read its run
 *    (consistent).
 * 2. DEAD, or RUNNING with a lease past its end by the takeover margin and no attempt left →
 *    `LedgerOps.reviveRun` (conditional on the status and token seen): attempt 0, READY, or UNKNOWN
 *    when the last attempt's result is unknown (its next claim reconciles first); a RUNNING run's
 *    fence advances like a takeover.
 *    SUCCEEDED → not revived: when its message comes back the worker acks it as a duplicate, so it
 *    never executes again; likewise other terminal runs (SKIPPED, SUPERSEDED, MANUAL).
 *    READY/RETRY/UNKNOWN, or RUNNING with attempts left → left as they are (the claim handles them).
 *    No such run, or not a run message → counted as unknown (it will come back to the DLQ).
 * 3. Release the received messages (visibility 0), then StartMessageMoveTask from the DLQ to the
 *    run queue (DestinationArn given explicitly: messages sent to the DLQ by hand carry no source).
 *
 * A crash between 2 and 3 is safe: revived runs are open (READY or UNKNOWN) and in the sweeper's
 * watch index, dispatched now, so the planner's sweeper re-dispatches them after its grace period
 * even if no message moves.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  StartMessageMoveTaskCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Ledger } from '../../shared/store/ledger.js';
import { needsRevival, revivalRefusal, type LedgerOps } from '../../shared/store/repairs.js';
import { jobsByName } from '../../shared/config.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { parseRunMessage } from '../../shared/core/run-message.js';
import { isTerminal, RunStatus } from '../../shared/core/vocabulary.js';
import { jobsOf, noExtraPositionals, type CommonValues, operatorOf, parseCommand, parsePositive, stringOption } from './args.js';
import { cell, clockOf, EXIT_OK, OpsFailure, printJson, printTable, UsageError, type OpsIo } from './io.js';
import { revivalRefusalInLane, revivedInLane } from '../../shared/worker/lanes.js';
import { withTarget } from './target.js';

export const redriveUsage = 'redrive [--max-per-second 10] [--dry-run] [--by NAME] | redrive --drop MESSAGE_ID [--dry-run]';

export type RedriveAction = 'revived' | 'open' | 'skipped-succeeded' | 'skipped-terminal' | 'changed' | 'unknown';

export interface RedriveEntry {
  readonly messageId: string;
  readonly runKey?: string;
  /** The run's status when read (before any revival). */
  readonly status?: RunStatus;
  readonly action: RedriveAction;
  readonly detail?: string;
}

export interface RedriveReport {
  readonly messages: number;
  readonly revived: number;
  /** Runs still open (claimable, or leased with attempts left): moved back unchanged. */
  readonly open: number;
  readonly skippedSucceeded: number;
  /** Other terminal runs (SKIPPED, SUPERSEDED, MANUAL): not revived, acked as duplicates. */
  readonly skippedTerminal: number;
  /** The run changed while we looked (a worker claimed it): left to the worker. */
  readonly changed: number;
  /** Not a run message, unknown job, or no such run. */
  readonly unknown: number;
  readonly dryRun: boolean;
  readonly taskHandle?: string;
  readonly maxPerSecond: number;
  readonly entries: readonly RedriveEntry[];
}

export interface RedriveDeps {
  readonly sqs: SQSClient;
  readonly ledger: Ledger;
  readonly ops: LedgerOps;
  readonly jobs: readonly Job[];
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: () => Promise<string>;
  readonly runQueueArn: () => Promise<string>;
  readonly clock: () => number;
}

export interface RedriveOptions {
  /** StartMessageMoveTask rate (SQS allows 1..500). @default 10 */
  readonly maxPerSecond?: number;
  readonly dryRun?: boolean;
  /** Who asked (recorded on revived runs). */
  readonly by?: string;
  /** How long received messages stay hidden while we work. @default 300 s */
  readonly visibilitySeconds?: number;
  /** Stop receiving after this many messages. @default 10,000 */
  readonly maxMessages?: number;
}

async function visibleCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(Attributes.ApproximateNumberOfMessages ?? 0);
}

/** Receives (and hides) every message of the queue, up to `max`. */
export async function receiveAll(sqs: SQSClient, queueUrl: string, visibilitySeconds: number, max: number): Promise<Message[]> {
  const seen = new Map<string, Message>();
  let empty = 0;
  while (seen.size < max && empty < 3) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: visibilitySeconds,
        // A short long-poll asks every SQS server, where a 0 s poll samples a subset.
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    for (const message of Messages) if (message.MessageId && !seen.has(message.MessageId)) seen.set(message.MessageId, message);
    if (Messages.length > 0) empty = 0;
    else if ((await visibleCount(sqs, queueUrl)) === 0) break;
    else empty++;
  }
  return [...seen.values()];
}

/** Makes received messages visible again at once. */
export async function release(sqs: SQSClient, queueUrl: string, messages: readonly Message[]): Promise<void> {
  for (let start = 0; start < messages.length; start += 10) {
    const batch = messages.slice(start, start + 10);
    const { Failed = [] } = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
    if (Failed.length > 0) throw new OpsFailure(`could not release ${Failed.length} DLQ message(s): ${Failed[0]?.Code ?? ''} ${Failed[0]?.Message ?? ''}`.trim());
  }
}

export async function redrive(deps: RedriveDeps, options: RedriveOptions = {}): Promise<RedriveReport> {
  const maxPerSecond = options.maxPerSecond ?? 10;
  const jobs = jobsByName(deps.jobs);
  const messages = await receiveAll(deps.sqs, deps.deadLetterQueueUrl, options.visibilitySeconds ?? 300, options.maxMessages ?? 10_000);
  const entries: RedriveEntry[] = [];
  const decided = new Map<string, RedriveEntry>();
  try {
    for (const message of messages) {
      const messageId = message.MessageId ?? '?';
      const parsed = parseRunMessage(message.Body ?? '', jobs);
      if (!parsed.ok) {
        entries.push({ messageId, action: 'unknown', detail: `${parsed.code}: ${parsed.reason}` });
        continue;
      }
      const { runKey } = parsed.message;
      const earlier = decided.get(runKey);
      if (earlier) {
        // A second message for the same run: the run was handled with the first one.
        entries.push({ ...earlier, messageId, detail: 'another message of the same run' });
        continue;
      }
      const entry = await decide(deps, parsed.message, parsed.job, messageId, options);
      decided.set(runKey, entry);
      entries.push(entry);
    }
  } finally {
    // Whatever happened above, do not leave the messages hidden for the visibility timeout.
    await release(deps.sqs, deps.deadLetterQueueUrl, messages);
  }

  let taskHandle: string | undefined;
  if (!options.dryRun && messages.length > 0) {
    const [sourceArn, destinationArn] = await Promise.all([deps.deadLetterQueueArn(), deps.runQueueArn()]);
    const started = await deps.sqs.send(
      new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn, MaxNumberOfMessagesPerSecond: maxPerSecond }),
    );
    taskHandle = started.TaskHandle;
  }
  const count = (action: RedriveAction) => new Set(entries.filter((e) => e.action === action).map((e) => e.runKey ?? e.messageId)).size;
  return {
    messages: messages.length,
    revived: count('revived'),
    open: count('open'),
    skippedSucceeded: count('skipped-succeeded'),
    skippedTerminal: count('skipped-terminal'),
    changed: count('changed'),
    unknown: entries.filter((e) => e.action === 'unknown').length,
    dryRun: options.dryRun ?? false,
    taskHandle,
    maxPerSecond,
    entries,
  };
}

async function decide(
  deps: RedriveDeps,
  message: { job: string; slot: number; shard: number; runKey: string },
  job: Job,
  messageId: string,
  options: RedriveOptions,
): Promise<RedriveEntry> {
  const { runKey } = message;
  const run = await deps.ledger.getRun(message, true);
  if (!run) return { messageId, runKey, action: 'unknown', detail: 'no such run in the ledger' };
  const now = deps.clock();
  const base = { messageId, runKey, status: run.status };
  const refusal = revivalRefusal(run) ?? (await revivalRefusalInLane(deps.ledger, job, run, now));
  if (refusal && needsRevival(run, job.retry.maxAttempts, now, deps.ops.takeoverMarginMs)) return { ...base, action: 'skipped-terminal', detail: `not revived: ${refusal}` };
  if (needsRevival(run, job.retry.maxAttempts, now, deps.ops.takeoverMarginMs)) {
    if (options.dryRun) return { ...base, action: 'revived', detail: 'would be revived (dry run)' };
    const result = await deps.ops.reviveRun(run, { now, by: options.by });
    if (result.ok) await revivedInLane(deps.ledger, job, result.run, now);
    if (result.ok) return { ...base, action: 'revived', detail: `${result.run.status}, attempt 0 (was ${run.status}, attempt ${run.attempt})${result.run.status === RunStatus.UNKNOWN ? ': reconciles before running again' : ''}` };
    return { ...base, action: 'changed', detail: `changed meanwhile: now ${result.current?.status ?? 'gone'}, token ${result.current?.fencingToken ?? '?'}` };
  }
  if (run.status === RunStatus.SUCCEEDED) return { ...base, action: 'skipped-succeeded', detail: 'already SUCCEEDED: the worker will ack it as a duplicate' };
  if (isTerminal(run.status)) return { ...base, action: 'skipped-terminal', detail: `already ${run.status}: not revived` };
  return { ...base, action: 'open', detail: `still ${run.status}${run.status === RunStatus.RUNNING ? ' (lease live or attempts left)' : ''}: moved back as is` };
}

/** What `redrive --drop` deleted (or, with --dry-run, would delete). */
export interface DroppedMessage {
  readonly messageId: string;
  /** The run the message names, when it is a run message. */
  readonly runKey?: string;
  /** Why it is not a run message, when it is not. */
  readonly notARun?: string;
  readonly body: string;
  readonly receiveCount?: number;
  readonly deleted: boolean;
}

/**
 * Deletes one DLQ message by its id: a junk message (not a run message, an unknown job) that
 * `redrive` would only move back to come back again. Every other message is released at once.
 * Throws OpsFailure when no message has that id (nothing is deleted).
 */
export async function dropMessage(deps: Pick<RedriveDeps, 'sqs' | 'jobs' | 'deadLetterQueueUrl'>, messageId: string, options: { dryRun?: boolean; maxMessages?: number } = {}): Promise<DroppedMessage> {
  const messages = await receiveAll(deps.sqs, deps.deadLetterQueueUrl, 300, options.maxMessages ?? 10_000);
  const target = messages.find((m) => m.MessageId === messageId);
  const others = messages.filter((m) => m !== target);
  try {
    if (!target) throw new OpsFailure(`no message ${messageId} in the DLQ (${messages.length} message(s) seen): nothing deleted; \`redrive --dry-run\` lists their ids`);
    const parsed = parseRunMessage(target.Body ?? '', jobsByName(deps.jobs));
    const dropped = {
      messageId,
      ...(parsed.ok ? { runKey: parsed.message.runKey } : { notARun: `${parsed.code}: ${parsed.reason}` }),
      body: target.Body ?? '',
      receiveCount: target.Attributes?.ApproximateReceiveCount === undefined ? undefined : Number(target.Attributes.ApproximateReceiveCount),
    };
    if (options.dryRun) {
      others.push(target);
      return { ...dropped, deleted: false };
    }
    await deps.sqs.send(new DeleteMessageCommand({ QueueUrl: deps.deadLetterQueueUrl, ReceiptHandle: target.ReceiptHandle! }));
    return { ...dropped, deleted: true };
  } finally {
    await release(deps.sqs, deps.deadLetterQueueUrl, others);
  }
}

async function dropCommand(values: CommonValues & Record<string, unknown>, messageId: string, io: OpsIo): Promise<number> {
  const dryRun = values['dry-run'] === true;
  const jobs = jobsOf(io);
  const dropped = await withTarget(values, io, (target) => dropMessage({ sqs: target.clients.sqs, jobs, deadLetterQueueUrl: target.deadLetterQueueUrl }, messageId, { dryRun }));
  if (values.json) {
    printJson(io, dropped);
    return EXIT_OK;
  }
  const what = dropped.runKey !== undefined ? `run message of ${dropped.runKey}` : `not a run message (${dropped.notARun})`;
  const received = dropped.receiveCount === undefined ? '' : `, received ${dropped.receiveCount} time(s)`;
  io.stdout(`${dropped.deleted ? 'deleted' : 'dry run: would delete'} DLQ message ${messageId}: ${what}${received}; body: ${cell(dropped.body, 200)}`);
  if (dropped.deleted && dropped.runKey !== undefined) io.stdout(`the run itself is unchanged: \`show ${dropped.runKey}\`; \`retry\` or \`resolve\` it if it still needs a person`);
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
    for (const other of ['max-per-second', 'by']) if (values[other] !== undefined) throw new UsageError(other, `--${other} does not apply to --drop (it deletes one message and revives nothing)`);
    return dropCommand(values, drop.trim(), io);
  }
  const maxPerSecond = parsePositive(stringOption(values, 'max-per-second'), 'max-per-second', 10, { integer: true, max: 500 });
  const by = operatorOf(values, io);
  const jobs = jobsOf(io);
  const report = await withTarget(values, io, (target) =>
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
