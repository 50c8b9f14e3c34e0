/**
 * Outbox relay Lambda: DynamoDB Streams (ledger table, NEW_IMAGE) → EventBridge. Reports the
 * first failed record so the event source retries from there (ReportBatchItemFailures): a retry
 * republishes rows under their own stable event keys, never new ones. The event source filter
 * passes only INSERTs of outbox rows; outboxEventsFrom skips anything else too (a MODIFY is a
 * re-execution, a REMOVE the row's TTL expiry). Wiring only.
 */
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { EventBridgePublisher } from '../shared/messaging/event-publisher.js';
import { outboxEventsFrom } from '../shared/core/outbox.js';
import { requireEnv } from '../shared/runtime/clients.js';
import { ENV } from '../shared/core/resources.js';

const publisher = new EventBridgePublisher(new EventBridgeClient({}), requireEnv(ENV.eventBusName));

export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const records = event.Records.map((record) => ({
    eventName: record.eventName,
    sequenceNumber: record.dynamodb?.SequenceNumber,
    newImage: record.dynamodb?.NewImage ? unmarshall(record.dynamodb.NewImage as Record<string, AttributeValue>) : undefined,
  }));
  for (const { event: outboxEvent, sequenceNumber } of outboxEventsFrom(records)) {
    try {
      await publisher.publish([outboxEvent]);
    } catch (error) {
      console.error(
        JSON.stringify({ level: 'ERROR', message: 'outbox publish failed', eventKey: outboxEvent.eventKey, error: String(error) }),
      );
      return { batchItemFailures: sequenceNumber ? [{ itemIdentifier: sequenceNumber }] : [] };
    }
  }
  return { batchItemFailures: [] };
}
