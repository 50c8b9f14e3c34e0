/**
 * The deployed job config in the ledger (shared/core/deployed-config.ts says what it is):
 *
 *   CONFIG / #DEPLOYED                 hash, recordedAt, jobs, chunks, bytes, data (chunk 0)
 *   CONFIG / #DEPLOYED#<hash>#nnn      data (chunk nnn ≥ 1, only for a config over one chunk)
 *
 * `data` is the gzip'd JSON document cut into chunks of at most CHUNK_BYTES (an item holds at
 * most 400 KB). The further chunks are written before the head and are named by the hash they
 * belong to, so a reader never joins pieces of two recordings, and two planners recording the same
 * config write the same items. The planner records on each cold start and writes only when the
 * recorded hash differs; the ops CLI reads it before every command that has a target.
 *
 * The chunks of a config that was replaced stay in the table (a few hundred KB per change of a
 * config that large); a head of at most one chunk, the common case, replaces itself.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { gunzipSync, gzipSync } from 'node:zlib';
import { configDocumentJson, configHash, parseConfigDocument, type DeployedConfig } from '../core/deployed-config.js';
import type { Job } from '../schedule/job-schema.js';
import { LedgerKeys } from '../core/resources.js';
import { conditionalWrite } from './conditional.js';

/** Bytes of gzip'd JSON per item: well under DynamoDB's 400 KB item limit, with room for the keys. */
export const CHUNK_BYTES = 350_000;

export interface RecordResult {
  readonly hash: string;
  /** False when the ledger already held this config: nothing was written. */
  readonly written: boolean;
  readonly chunks: number;
}

const HEAD_KEY = { pk: LedgerKeys.configPk, sk: LedgerKeys.deployedConfigSk } as const;

function bytesOf(value: unknown, what: string): Uint8Array {
  if (value instanceof Uint8Array) return value;
  throw new Error(`deployed config ${what}: expected binary data`);
}

export class DeployedConfigStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** The store of a ledger's table. */
  static of(ledger: { readonly doc: DynamoDBDocumentClient; readonly tableName: string }): DeployedConfigStore {
    return new DeployedConfigStore(ledger.doc, ledger.tableName);
  }

  /**
   * Records `jobs` as the deployed config unless the ledger holds it already. Idempotent: a
   * repeat, or a second planner recording the same config at the same time, writes nothing
   * more (the head's put is conditional on another hash).
   */
  async recordIfChanged(jobs: readonly Job[], now: number): Promise<RecordResult> {
    const hash = configHash(jobs);
    const head = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: HEAD_KEY,
        ProjectionExpression: '#hash, chunks',
        ExpressionAttributeNames: { '#hash': 'hash' },
        ConsistentRead: true,
      }),
    );
    if (head.Item?.hash === hash) return { hash, written: false, chunks: Number(head.Item.chunks ?? 1) };
    const data = gzipSync(Buffer.from(configDocumentJson(jobs), 'utf8'));
    const chunks: Uint8Array[] = [];
    for (let offset = 0; offset < data.length; offset += CHUNK_BYTES) chunks.push(data.subarray(offset, offset + CHUNK_BYTES));
    for (let index = 1; index < chunks.length; index++) {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: LedgerKeys.configPk, sk: LedgerKeys.deployedConfigChunkSk(hash, index), hash, data: chunks[index] },
        }),
      );
    }
    const noHead = 'attribute_not_exists(pk)';
    const otherConfig = '#hash <> :hash';
    const result = await conditionalWrite(
      this.doc,
      new PutCommand({
        TableName: this.tableName,
        Item: { ...HEAD_KEY, hash, recordedAt: now, jobs: jobs.length, chunks: chunks.length, bytes: data.length, data: chunks[0] },
        ConditionExpression: `${noHead} OR ${otherConfig}`,
        ExpressionAttributeNames: { '#hash': 'hash' },
        ExpressionAttributeValues: { ':hash': hash },
      }),
    );
    // Refused: another planner recorded this very config since the read: it is recorded.
    return { hash, written: result.kind === 'ok', chunks: chunks.length };
  }

  /** The recorded config, or undefined when no planner has recorded one in this ledger yet. */
  async readRecorded(): Promise<DeployedConfig | undefined> {
    const { Item: head } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: HEAD_KEY, ConsistentRead: true }));
    if (!head) return undefined;
    const hash = String(head.hash);
    const count = Number(head.chunks ?? 1);
    const parts: Uint8Array[] = [bytesOf(head.data, 'chunk 0')];
    for (let index = 1; index < count; index++) {
      const { Item } = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: LedgerKeys.configPk, sk: LedgerKeys.deployedConfigChunkSk(hash, index) },
          ConsistentRead: true,
        }),
      );
      if (!Item) throw new Error(`deployed config ${hash.slice(0, 12)}: chunk ${index} of ${count} is missing`);
      parts.push(bytesOf(Item.data, `chunk ${index}`));
    }
    const json = gunzipSync(Buffer.concat(parts)).toString('utf8');
    return { hash, jobs: parseConfigDocument(json, hash), recordedAt: Number(head.recordedAt) };
  }
}
