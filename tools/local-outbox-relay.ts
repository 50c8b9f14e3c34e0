/**
 * The local outbox relay: reads the ledger table's stream on DynamoDB Local and hands each outbox
 * event to a callback (the local runtime prints them), as the relay Lambda publishes to
 * EventBridge in AWS. Same mapping code: shared/core/outbox.ts. There is no event source filter
 * here, so it reads every record of the stream; the mapping publishes INSERTs of outbox rows only
 * (a row's TTL delete, or a delete before a republish, is a REMOVE and publishes nothing).
 */
import { DescribeTableCommand, type DynamoDBClient, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { OUTBOX_PK_PREFIX, outboxEventsFrom, type OutboxEvent } from '../shared/core/outbox.js';
import { localClientConfig } from './local-stack.js';

export class LocalOutboxRelay {
  private readonly streams: DynamoDBStreamsClient;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly iterators = new Map<string, string | undefined>();
  published = 0;

  constructor(
    private readonly dynamo: DynamoDBClient,
    endpoint: string,
    private readonly tableName: string,
    private readonly publish: (event: OutboxEvent) => void | Promise<void>,
    private readonly onError: (error: unknown) => void = (error) => console.error('outbox relay error', error),
  ) {
    this.streams = new DynamoDBStreamsClient(localClientConfig(endpoint));
  }

  private streamArn = '';
  private readonly lastSequence = new Map<string, string>();

  /**
   * Starts reading; `from: 'start'` replays the stream from its oldest record (a relay retry),
   * `'now'` skips what is already there. Both start at TRIM_HORIZON: DynamoDB Local invalidates
   * LATEST iterators on busy tables, while a remembered sequence number can always be resumed.
   */
  async start(from: 'start' | 'now' = 'now'): Promise<void> {
    const { Table } = await this.dynamo.send(new DescribeTableCommand({ TableName: this.tableName }));
    if (!Table?.LatestStreamArn) throw new Error(`table ${this.tableName} has no stream`);
    this.streamArn = Table.LatestStreamArn;
    const { StreamDescription } = await this.streams.send(new DescribeStreamCommand({ StreamArn: this.streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) this.iterators.set(shard.ShardId!, await this.iteratorFor(shard.ShardId!));
    if (from === 'now') while ((await this.pollOnce(false)) > 0);
    this.running = true;
    this.loop = this.run();
  }

  private async iteratorFor(shardId: string): Promise<string | undefined> {
    const after = this.lastSequence.get(shardId);
    const { ShardIterator } = await this.streams.send(
      new GetShardIteratorCommand({
        StreamArn: this.streamArn,
        ShardId: shardId,
        ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return ShardIterator;
  }

  /**
   * Stops after reading to the end of every shard, so events written by the final runs are not
   * left behind (a pass can end early: a page of a shard holds at most 1,000 records).
   */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    try {
      while ((await this.pollOnce()) > 0);
    } finally {
      this.streams.destroy();
    }
  }

  /** One pass over every shard; returns how many stream records were read. */
  async pollOnce(publish = true): Promise<number> {
    let read = 0;
    for (const [shardId, iterator] of this.iterators) {
      if (!iterator) continue;
      let page;
      try {
        page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name !== 'TrimmedDataAccessException' && name !== 'ExpiredIteratorException') throw error;
        // Resume right after the last record handled: nothing skipped, nothing published twice.
        this.iterators.set(shardId, await this.iteratorFor(shardId));
        continue;
      }
      const { Records = [], NextShardIterator } = page;
      this.iterators.set(shardId, NextShardIterator);
      read += Records.length;
      for (const record of Records) {
        if (publish)
          for (const { event } of outboxEventsFrom([toRecordLike(record)])) {
            await this.publish(event);
            this.published++;
          }
        if (record.dynamodb?.SequenceNumber) this.lastSequence.set(shardId, record.dynamodb.SequenceNumber);
      }
    }
    return read;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.pollOnce();
      } catch (error) {
        this.onError(error);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Only outbox rows are unmarshalled: the ledger's other items (run items, the planner's state)
 * are none of the relay's business, and DynamoDB Local writes some of their nested empty maps
 * into stream images in a form `unmarshall` refuses.
 */
function toRecordLike(record: StreamRecord) {
  const image = record.dynamodb?.NewImage;
  const outboxRow = typeof image?.pk?.S === 'string' && image.pk.S.startsWith(OUTBOX_PK_PREFIX);
  return {
    eventName: record.eventName,
    sequenceNumber: record.dynamodb?.SequenceNumber,
    newImage: image && outboxRow ? unmarshall(image as Record<string, AttributeValue>) : undefined,
  };
}
