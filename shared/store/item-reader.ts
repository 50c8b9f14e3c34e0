/** `ctx.reader`: consistent reads of business items for handlers. */
import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ItemReader } from '../handler-api.js';

export class DynamoItemReader implements ItemReader {
  constructor(private readonly doc: DynamoDBDocumentClient) {}

  async get(table: string, key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
    return Item;
  }

  async query(table: string, pk: string, options: { after?: string; limit?: number } = {}): Promise<Record<string, unknown>[]> {
    const { Items = [] } = await this.doc.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: options.after === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
        ExpressionAttributeValues: { ':pk': pk, ...(options.after === undefined ? {} : { ':after': options.after }) },
        Limit: options.limit,
        ConsistentRead: true,
      }),
    );
    return Items;
  }
}
