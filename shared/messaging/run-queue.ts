/**
 * The run queue adapter: SQS calls the planner and worker make. It batches and marshals; what to
 * send and when is decided by the planner and worker.
 */
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { RunMessage } from '../core/vocabulary.js';
import { RUN_QUEUES } from '../core/resources.js';

export interface OutgoingRun {
  readonly message: RunMessage;
  /** Whole seconds SQS keeps the message invisible (0..900). */
  readonly delaySeconds: number;
}

/** Some entries of a SendMessageBatch were refused; the caller decides whether to retry them. */
export class SendRunsError extends Error {
  override readonly name = 'SendRunsError';
  constructor(readonly failed: readonly { readonly runKey: string; readonly code: string; readonly message: string }[]) {
    super(`SQS refused ${failed.length} run message(s): ${failed.map((f) => `${f.runKey} (${f.code})`).join(', ')}`);
  }
}

/** Messages per SendMessageBatch (the SQS maximum). */
export const SEND_BATCH_SIZE = 10;

export class RunQueue {
  constructor(
    private readonly sqs: SQSClient,
    readonly queueUrl: string,
  ) {}

  /** Sends in batches of 10, in order; entries SQS refused for its own reasons are retried once. */
  async send(runs: readonly OutgoingRun[]): Promise<void> {
    const failed: { runKey: string; code: string; message: string }[] = [];
    for (let start = 0; start < runs.length; start += SEND_BATCH_SIZE) {
      let pending = runs.slice(start, start + SEND_BATCH_SIZE);
      for (let attempt = 1; pending.length > 0; attempt++) {
        const batch = pending;
        const { Failed = [] } = await this.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: batch.map((run, index) => ({
              Id: String(index),
              MessageBody: JSON.stringify(run.message),
              DelaySeconds: Math.max(0, Math.min(RUN_QUEUES.maxDelaySeconds, Math.floor(run.delaySeconds))),
            })),
          }),
        );
        const refused = Failed.map((entry) => ({ run: batch[Number(entry.Id)]!, entry }));
        const retryable = attempt === 1 ? refused.filter((r) => !r.entry.SenderFault) : [];
        for (const r of refused) {
          if (retryable.includes(r)) continue;
          failed.push({ runKey: r.run.message.runKey, code: r.entry.Code ?? 'Unknown', message: r.entry.Message ?? '' });
        }
        pending = retryable.map((r) => r.run);
      }
    }
    if (failed.length > 0) throw new SendRunsError(failed);
  }

  /** Hides a received message for `seconds` more (SQS caps visibility at 12 hours); `signal` abandons the call. */
  async changeVisibility(receiptHandle: string, seconds: number, signal?: AbortSignal): Promise<void> {
    await this.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(seconds))),
      }),
      { abortSignal: signal },
    );
  }
}
