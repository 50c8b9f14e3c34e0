/**
 * A stand-in for the Lambda SQS event source mapping: polls the run queue, hands each batch
 * to the worker, deletes the records it did not report in `batchItemFailures` and leaves the
 * others to come back after their visibility timeout (or the one the worker set).
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { BatchResult, QueueRecord } from '../shared/worker/batch.js';

export interface PollerOptions {
  readonly queueUrl: string;
  /** @default 10 */
  readonly batchSize?: number;
  /**
   * ReceiveMessage wait. Real SQS answers a long poll as soon as it holds a message; local-aws-sqs
   * answers only when it holds a full batch or the wait is over (it checks every 10 ms and adds
   * 40 ms to the wait). A long wait therefore makes a lone due run up to a whole wait late, which
   * is not what the Lambda event source mapping does on AWS. 0 is a 40 ms poll here: a message
   * is seen within ~50 ms of becoming visible, at the price of ~25 empty receives per second per
   * idle poller (local only; they are not the scheduler's calls). @default 0
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
        WaitTimeSeconds: this.options.waitTimeSeconds ?? 0,
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
      if (Failed.length === chunk.length)
        this.onError(new Error(`could not delete ${Failed.length} message(s): ${Failed.map((f) => f.Code).join(', ')}`));
    }
    return Messages.length;
  }
}
