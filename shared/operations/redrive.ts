/**
 * Redrive (`ops redrive`): send the DLQ's messages back to the run queue, after giving their DEAD
 * runs a fresh attempt budget; and drop one junk message by its id (`ops redrive --drop`).
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
import { DeleteMessageCommand, StartMessageMoveTaskCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Ledger } from '../store/ledger.js';
import { needsRevival, revivalRefusal, type LedgerOps } from '../store/repairs.js';
import { receiveAll, release } from '../messaging/dead-letter-queue.js';
import { jobsByName } from '../config.js';
import type { Job } from '../schedule/job-schema-core.js';
import { parseRunMessage } from '../core/run-message.js';
import { isTerminal, RunStatus } from '../core/vocabulary.js';
import { revivalRefusalInLane, revivedInLane } from './revival-lanes.js';

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
  if (refusal && needsRevival(run, job.retry.maxAttempts, now, deps.ops.takeoverMarginMs))
    return { ...base, action: 'skipped-terminal', detail: `not revived: ${refusal}` };
  if (needsRevival(run, job.retry.maxAttempts, now, deps.ops.takeoverMarginMs)) {
    if (options.dryRun) return { ...base, action: 'revived', detail: 'would be revived (dry run)' };
    const result = await deps.ops.reviveRun(run, { now, by: options.by });
    if (result.ok) await revivedInLane(deps.ledger, job, result.run, now);
    if (result.ok)
      return {
        ...base,
        action: 'revived',
        detail: `${result.run.status}, attempt 0 (was ${run.status}, attempt ${run.attempt})${result.run.status === RunStatus.UNKNOWN ? ': reconciles before running again' : ''}`,
      };
    return {
      ...base,
      action: 'changed',
      detail: `changed meanwhile: now ${result.current?.status ?? 'gone'}, token ${result.current?.fencingToken ?? '?'}`,
    };
  }
  if (run.status === RunStatus.SUCCEEDED)
    return { ...base, action: 'skipped-succeeded', detail: 'already SUCCEEDED: the worker will ack it as a duplicate' };
  if (isTerminal(run.status)) return { ...base, action: 'skipped-terminal', detail: `already ${run.status}: not revived` };
  return {
    ...base,
    action: 'open',
    detail: `still ${run.status}${run.status === RunStatus.RUNNING ? ' (lease live or attempts left)' : ''}: moved back as is`,
  };
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

/** What `dropMessage` came to: the message deleted (or, in a dry run, found), or none has that id. */
export type DropOutcome = { readonly ok: true; readonly dropped: DroppedMessage } | { readonly ok: false; readonly seen: number };

/**
 * Deletes one DLQ message by its id: a junk message (not a run message, an unknown job) that
 * `redrive` would only move back to come back again. Every other message is released at once.
 * When no message has that id nothing is deleted.
 */
export async function dropMessage(
  deps: Pick<RedriveDeps, 'sqs' | 'jobs' | 'deadLetterQueueUrl'>,
  messageId: string,
  options: { dryRun?: boolean; maxMessages?: number } = {},
): Promise<DropOutcome> {
  const messages = await receiveAll(deps.sqs, deps.deadLetterQueueUrl, 300, options.maxMessages ?? 10_000);
  const target = messages.find((m) => m.MessageId === messageId);
  const others = messages.filter((m) => m !== target);
  try {
    if (!target) return { ok: false, seen: messages.length };
    const parsed = parseRunMessage(target.Body ?? '', jobsByName(deps.jobs));
    const dropped = {
      messageId,
      ...(parsed.ok ? { runKey: parsed.message.runKey } : { notARun: `${parsed.code}: ${parsed.reason}` }),
      body: target.Body ?? '',
      receiveCount:
        target.Attributes?.ApproximateReceiveCount === undefined ? undefined : Number(target.Attributes.ApproximateReceiveCount),
    };
    if (options.dryRun) {
      others.push(target);
      return { ok: true, dropped: { ...dropped, deleted: false } };
    }
    await deps.sqs.send(new DeleteMessageCommand({ QueueUrl: deps.deadLetterQueueUrl, ReceiptHandle: target.ReceiptHandle! }));
    return { ok: true, dropped: { ...dropped, deleted: true } };
  } finally {
    await release(deps.sqs, deps.deadLetterQueueUrl, others);
  }
}
