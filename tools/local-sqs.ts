/**
 * The local SQS of the local stack (tools/local-stack.ts): local-aws-sqs in this process, with two
 * patches on every queue it creates: the receive count kept across visibility changes, and each
 * move to a dead-letter queue reported.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import type { DeadLetter } from './local-stack.js';

interface LocalSqsEntry {
  readonly record: { readonly MessageId: string; readonly attributes: Record<string, string> };
}
interface LocalSqsRecordInput {
  readonly MessageBody?: string;
  readonly MessageSystemAttributes?: Readonly<Record<string, { readonly StringValue?: string }>>;
}
interface LocalSqsQueue {
  readonly QueueName: string;
  setRecord(record: LocalSqsRecordInput, messageId?: string): unknown;
  newRecord(msg: unknown, delay?: number): LocalSqsEntry;
  receive(args: unknown): Promise<{ readonly MessageId: string; readonly ReceiptHandle: string }[]>;
  changeVisibility(handle: string, timeout: string): boolean;
}

/**
 * local-aws-sqs counts every ChangeMessageVisibility as a receive (real SQS does not), so a run
 * that heartbeats a few times would reach the DLQ on its next delivery. Until that is fixed
 * upstream, each queue remembers its message entries (newRecord returns them) and restores the
 * receive count around a visibility change.
 */
function keepReceiveCountOnVisibilityChange(queue: LocalSqsQueue): void {
  const entries = new Map<string, LocalSqsEntry>();
  const handles = new Map<string, string>();
  const newRecord = queue.newRecord.bind(queue);
  queue.newRecord = (msg, delay) => {
    const entry = newRecord(msg, delay);
    entries.set(entry.record.MessageId, entry);
    return entry;
  };
  const receive = queue.receive.bind(queue);
  queue.receive = async (args) => {
    const records = await receive(args);
    for (const record of records) handles.set(record.ReceiptHandle, record.MessageId);
    return records;
  };
  const change = queue.changeVisibility.bind(queue);
  queue.changeVisibility = (handle, timeout) => {
    const messageId = handles.get(handle);
    const entry = messageId === undefined ? undefined : entries.get(messageId);
    const before = entry?.record.attributes.ApproximateReceiveCount;
    const changed = change(handle, timeout);
    if (entry && before !== undefined) entry.record.attributes.ApproximateReceiveCount = before;
    return changed;
  };
}

/**
 * local-aws-sqs moves a message to a dead-letter queue by `setRecord` on that queue with the
 * message's id and a DeadLetterQueueSourceArn system attribute (a SendMessage passes neither):
 * each such call is reported, so `npm start` can print a line when a message lands in its DLQ.
 */
function reportDeadLetters(queue: LocalSqsQueue, listeners: ReadonlySet<(message: DeadLetter) => void>): void {
  const setRecord = queue.setRecord.bind(queue);
  queue.setRecord = (record, messageId) => {
    const result = setRecord(record, messageId);
    if (messageId !== undefined && record.MessageSystemAttributes?.DeadLetterQueueSourceArn !== undefined) {
      for (const listener of listeners) listener({ messageId, body: record.MessageBody ?? '', queueName: queue.QueueName });
    }
    return result;
  };
}

/** Patches every queue the server creates, now and later (tests create queues per file). */
function patchQueuesAsCreated(queues: LocalSqsQueue[], deadLetters: ReadonlySet<(message: DeadLetter) => void>): void {
  const push = queues.push.bind(queues);
  queues.push = (...created: LocalSqsQueue[]) => {
    for (const queue of created) {
      keepReceiveCountOnVisibilityChange(queue);
      reportDeadLetters(queue, deadLetters);
    }
    return push(...created);
  };
}

export async function startSqs(
  port: number,
  deadLetters: ReadonlySet<(message: DeadLetter) => void>,
): Promise<{ server: Server; service: { Queues: object[] } }> {
  const { createRequestHandler } = await import('local-aws-sqs');
  const { requestHandler, service } = createRequestHandler({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false });
  patchQueuesAsCreated(service.Queues, deadLetters);
  const server = createHttpServer(requestHandler);
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolveListen());
  });
  service.PORT = port;
  return { server, service };
}
