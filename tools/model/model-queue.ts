/**
 * The run queue in virtual time, over the real local-aws-sqs queue.
 *
 * local-aws-sqs keeps delays and visibility in real seconds, which a scenario's virtual clock
 * does not follow. So the messages live in the real queue (every send, visibility change and
 * delete the planner, workers and ops make is a real SQS call, with faults on it), while the
 * *timing* is kept here, against virtual time:
 *  - sends go out with DelaySeconds 0; the delay asked for is recorded here as "not visible
 *    before", keyed by the message id SQS returned (per attempt: a send whose response was lost
 *    still put its messages in the queue, and they are known here too);
 *  - the harness receives every new message once from the real queue and keeps it hidden there
 *    (12 h); it is handed to a worker lane (a Lambda event source) only when virtual time passes
 *    its visibility, with its receive count, and hidden for the queue's visibility timeout again;
 *  - ChangeMessageVisibility calls go to SQS (kept hidden 12 h there) and set the virtual
 *    visibility here; successful deletes remove the message;
 *  - a message received maxReceiveCount times that comes due again is moved to the real DLQ
 *    (SendMessage + DeleteMessage), where `ops redrive` finds it.
 */
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { QueuedMessage } from '../verify/checker.js';
import type { QueueRecord } from '../../shared/worker/batch.js';
import type { VirtualTime } from './virtual-time.js';

/** Real-time visibility that keeps a message out of real circulation for the whole scenario. */
export const HIDDEN_SECONDS = 43_200;

/** Longest real time the harness waits for a redrive's move task (see `afterRedrive`). */
const REDRIVE_WAIT_MS = 60_000;

interface Message {
  readonly messageId: string;
  readonly seq: number;
  body: string;
  runKey?: string;
  receiptHandle?: string;
  visibleAt: number;
  receives: number;
  state: 'in-flight' | 'queued' | 'deleted' | 'dlq';
}

export interface ModelQueueOptions {
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  /** The queue's visibility timeout (virtual ms) after a receive. */
  readonly visibilityMs: number;
  readonly maxReceiveCount: number;
}

function runKeyOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { runKey?: unknown };
    return typeof parsed.runKey === 'string' ? parsed.runKey : undefined;
  } catch {
    return undefined;
  }
}

export class ModelQueue {
  private readonly messages = new Map<string, Message>();
  private readonly byHandle = new Map<string, string>();
  /** Messages SQS accepted that the harness has not received from the real queue yet. */
  private expected = 0;
  private seq = 0;
  movedToDlq = 0;
  deliveries = 0;
  /** Every message moved to the DLQ: its run and when (virtual time), for the check that no progressing run is dead-lettered. */
  readonly deadLettered: { readonly runKey: string; readonly at: number }[] = [];

  constructor(
    private readonly sqs: SQSClient,
    private readonly time: VirtualTime,
    readonly options: ModelQueueOptions,
  ) {}

  /** A send attempt that SQS accepted: `delays` by the ids SQS returned. */
  onSent(sent: readonly { messageId: string; delaySeconds: number; body?: string }[]): void {
    for (const s of sent) {
      if (this.messages.has(s.messageId)) continue;
      this.messages.set(s.messageId, {
        messageId: s.messageId,
        seq: this.seq++,
        body: s.body ?? '',
        runKey: s.body ? runKeyOf(s.body) : undefined,
        visibleAt: this.time.now() + Math.max(0, s.delaySeconds) * 1000,
        receives: 0,
        state: 'in-flight',
      });
      this.expected++;
    }
  }

  /** A visibility change SQS accepted. */
  onVisibility(receiptHandle: string, seconds: number): void {
    const message = this.messages.get(this.byHandle.get(receiptHandle) ?? '');
    if (message && message.state === 'queued') message.visibleAt = this.time.now() + Math.max(0, seconds) * 1000;
  }

  /** A delete SQS accepted. */
  onDeleted(receiptHandle: string): void {
    const message = this.messages.get(this.byHandle.get(receiptHandle) ?? '');
    if (message) message.state = 'deleted';
  }

  /** Receives every message SQS holds that the harness has not seen yet (hides them there). */
  async pull(extra = 0): Promise<void> {
    let wanted = this.expected + extra;
    for (let empty = 0; wanted > 0 && empty < 20; ) {
      const { Messages = [] } = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.options.queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          VisibilityTimeout: HIDDEN_SECONDS,
        }),
      );
      if (Messages.length === 0) {
        empty++;
        continue;
      }
      for (const m of Messages) {
        if (!m.MessageId || !m.ReceiptHandle) continue;
        let message = this.messages.get(m.MessageId);
        if (!message) {
          // Not sent through a recorded client (moved back from the DLQ): visible now.
          message = {
            messageId: m.MessageId,
            seq: this.seq++,
            body: m.Body ?? '',
            visibleAt: this.time.now(),
            receives: 0,
            state: 'in-flight',
          };
          this.messages.set(m.MessageId, message);
          this.expected++;
        }
        if (message.state === 'in-flight') {
          message.state = 'queued';
          this.expected--;
          wanted--;
        }
        message.body = m.Body ?? message.body;
        message.runKey = runKeyOf(message.body);
        message.receiptHandle = m.ReceiptHandle;
        this.byHandle.set(m.ReceiptHandle, m.MessageId);
      }
    }
  }

  /**
   * Waits (real time) for a move task started by `ops redrive` to end, then pulls what it moved.
   * local-aws-sqs moves in rounds one second of real time apart, so a fixed bound of 4 s (as here
   * before) can pass on a loaded machine; nothing was then pulled, and the moved messages reached
   * the model only at some later pull, counted against the messages that pull was waiting for.
   * So it waits for the task's end, and fails loudly (not silently) only past a minute. (Virtual
   * time does not wait for the task: the moved messages come due whenever the pull lands.)
   */
  async afterRedrive(deadLetterQueueArn: string): Promise<void> {
    const deadline = Date.now() + REDRIVE_WAIT_MS;
    for (;;) {
      const { Results = [] } = await this.sqs.send(new ListMessageMoveTasksCommand({ SourceArn: deadLetterQueueArn, MaxResults: 1 }));
      const task = Results[0];
      if (!task || task.Status !== 'RUNNING') {
        await this.pull(Number(task?.ApproximateNumberOfMessagesMoved ?? 0));
        return;
      }
      if (Date.now() > deadline)
        throw new Error(
          `the redrive's move task was still running after ${REDRIVE_WAIT_MS / 1000} s (${task.ApproximateNumberOfMessagesMoved ?? 0} message(s) moved)`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private due(): Message[] {
    const now = this.time.now();
    return [...this.messages.values()]
      .filter((m) => m.state === 'queued' && m.visibleAt <= now)
      .sort((a, b) => a.visibleAt - b.visibleAt || a.seq - b.seq);
  }

  /** Earliest virtual instant a queued message becomes visible (undefined: none queued). */
  nextVisibleAt(): number | undefined {
    let at: number | undefined;
    for (const m of this.messages.values()) if (m.state === 'queued' && (at === undefined || m.visibleAt < at)) at = m.visibleAt;
    return at;
  }

  hasDue(): boolean {
    return this.due().length > 0;
  }

  /**
   * Takes up to `max` due messages for one delivery, as the event source mapping receives them:
   * each gets a receive and is hidden for the queue's visibility timeout. A message that has
   * used every receive moves to the DLQ instead. `excluding` skips messages already in flight
   * elsewhere this round (unless a duplicate delivery is wanted).
   */
  async take(max: number, excluding: ReadonlySet<string> = new Set()): Promise<QueueRecord[]> {
    const records: QueueRecord[] = [];
    for (const message of this.due()) {
      if (records.length >= max) break;
      if (excluding.has(message.messageId)) continue;
      if (message.receives >= this.options.maxReceiveCount) {
        await this.moveToDlq(message);
        continue;
      }
      message.receives++;
      message.visibleAt = this.time.now() + this.options.visibilityMs;
      this.deliveries++;
      records.push(this.recordOf(message));
    }
    return records;
  }

  /** The same message delivered again (SQS may hand one message to two receivers). */
  duplicateOf(record: QueueRecord): QueueRecord {
    const message = this.messages.get(record.messageId);
    if (message) message.receives++;
    return message ? this.recordOf(message) : record;
  }

  private recordOf(message: Message): QueueRecord {
    return {
      messageId: message.messageId,
      receiptHandle: message.receiptHandle!,
      body: message.body,
      attributes: { ApproximateReceiveCount: String(message.receives) },
    };
  }

  private async moveToDlq(message: Message): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.options.deadLetterQueueUrl, MessageBody: message.body }));
    await this.sqs.send(new DeleteMessageCommand({ QueueUrl: this.options.queueUrl, ReceiptHandle: message.receiptHandle! }));
    message.state = 'dlq';
    this.movedToDlq++;
    if (message.runKey !== undefined) this.deadLettered.push({ runKey: message.runKey, at: this.time.now() });
  }

  async deadLetterDepth(): Promise<number> {
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.options.deadLetterQueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return Number(Attributes.ApproximateNumberOfMessages ?? 0) + Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  /** Messages still in the run queue, for the liveness check. */
  remaining(): QueuedMessage[] {
    return [...this.messages.values()]
      .filter((m) => m.state === 'queued' || m.state === 'in-flight')
      .map((m) => ({ messageId: m.messageId, runKey: m.runKey, receives: m.receives, visibleAt: m.visibleAt }));
  }

  /** Open run keys that have a message on its way (queued or not yet pulled). */
  runKeysWithMessage(): Set<string> {
    return new Set(
      [...this.messages.values()].filter((m) => (m.state === 'queued' || m.state === 'in-flight') && m.runKey).map((m) => m.runKey!),
    );
  }
}
