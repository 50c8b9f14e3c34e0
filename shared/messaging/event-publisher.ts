/** Publishes outbox events to an EventBridge bus (PutEvents, batches of 10). */
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { OUTBOX_SOURCE, type OutboxEvent } from '../core/outbox.js';

/** Some events were refused; `failedKeys` lists their event keys so the caller can retry them. */
export class PublishError extends Error {
  override readonly name = 'PublishError';
  constructor(readonly failedKeys: readonly string[]) {
    super(`EventBridge refused ${failedKeys.length} outbox event(s): ${failedKeys.join(', ')}`);
  }
}

export class EventBridgePublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {}

  async publish(events: readonly OutboxEvent[]): Promise<void> {
    const failed: string[] = [];
    for (let i = 0; i < events.length; i += 10) {
      const batch = events.slice(i, i + 10);
      const { Entries = [] } = await this.client.send(
        new PutEventsCommand({
          Entries: batch.map((event) => ({
            EventBusName: this.busName,
            Source: OUTBOX_SOURCE,
            DetailType: event.detailType,
            // The event key travels in the detail: consumers dedupe on it.
            Detail: JSON.stringify({ eventKey: event.eventKey, job: event.job, runKey: event.runKey, ...event.detail }),
          })),
        }),
      );
      Entries.forEach((entry, index) => {
        if (entry.ErrorCode) failed.push(batch[index]!.eventKey);
      });
    }
    if (failed.length > 0) throw new PublishError(failed);
  }
}
