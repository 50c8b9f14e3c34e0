/**
 * The dead-letter queue's SQS calls for the operator's redrive: receive (and hide) every message,
 * and make received messages visible again. What to do with each message is the caller's.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** SQS refused to make some received messages visible again; the message says how many and why. */
export class DeadLetterQueueError extends Error {
  override readonly name = 'DeadLetterQueueError';
}

async function visibleCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
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
    if (Failed.length > 0)
      throw new DeadLetterQueueError(
        `could not release ${Failed.length} DLQ message(s): ${Failed[0]?.Code ?? ''} ${Failed[0]?.Message ?? ''}`.trim(),
      );
  }
}
