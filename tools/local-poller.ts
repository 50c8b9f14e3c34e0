/**
 * A stand-in for the Lambda SQS event source mapping: long-polls the run queue, hands each batch
 * to the worker, deletes the records it did not report in `batchItemFailures` and leaves the
 * others to come back after their visibility timeout (or the one the worker set).
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { BatchResult, QueueRecord } from '../shared/worker.js';

export interface PollerOptions {
  readonly queueUrl: string;
  /** @default 10 */
  readonly batchSize?: number;
  /**
   * Long-poll wait. local-aws-sqs does not wake a pending long poll when a delayed message
   * becomes visible, so this bounds how late such a message is seen; runs are enqueued
   * `startLead` early, which absorbs it. @default 1
   */
  readonly waitTimeSeconds?: number;
  /** Override the queue's visibility timeout for received messages (seconds). */
  readonly visibilityTimeoutSeconds?: number;
}

export type BatchHandler = (records: QueueRecord[]) => Promise<BatchResult>;

export class LocalPoller {
  private running = false;
  private loop: Promise<void> | undefined;
  private abort = new AbortController();
  batches = 0;
  received = 0;

  constructor(
    private readonly sqs: SQSClient,
    private readonly handle: BatchHandler,
    private readonly options: PollerOptions,
    private readonly onError: (error: unknown) => void = (error) => console.error('poller error', error),
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.pollOnce();
      } catch (error) {
        if (!this.running) break;
        this.onError(error);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async pollOnce(): Promise<number> {
    const { Messages = [] } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.options.queueUrl,
        MaxNumberOfMessages: this.options.batchSize ?? 10,
        WaitTimeSeconds: this.options.waitTimeSeconds ?? 1,
        VisibilityTimeout: this.options.visibilityTimeoutSeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
      { abortSignal: this.abort.signal },
    );
    if (Messages.length === 0) return 0;
    this.batches++;
    this.received += Messages.length;
    const records: QueueRecord[] = Messages.map((m) => ({
      messageId: m.MessageId!,
      receiptHandle: m.ReceiptHandle!,
      body: m.Body ?? '',
      attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount },
    }));
    const { batchItemFailures } = await this.handle(records);
    const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
    // Like the event source mapping: delete every copy of a message the batch did not report failed.
    const done = records.filter((r) => !failed.has(r.messageId));
    for (let i = 0; i < done.length; i += 10) {
      const chunk = done.slice(i, i + 10);
      const { Failed = [] } = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.options.queueUrl,
          Entries: chunk.map((r, index) => ({ Id: String(index), ReceiptHandle: r.receiptHandle })),
        }),
      );
      // A stale receipt handle of a duplicate copy may be refused; the newest copy's delete is what counts.
      if (Failed.length === chunk.length) this.onError(new Error(`could not delete ${Failed.length} message(s): ${Failed.map((f) => f.Code).join(', ')}`));
    }
    return Messages.length;
  }
}
