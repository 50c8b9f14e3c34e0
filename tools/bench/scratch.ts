import { startLocalStack, localClientConfig, createTables } from '../local-stack.js';
import { createClients } from '../../shared/runtime.js';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { mapBounded } from '../../shared/core/concurrency.js';
const stack = await startLocalStack();
const c = createClients({ dynamo: localClientConfig(stack.dynamoEndpoint), sqs: localClientConfig(stack.sqsEndpoint) });
await c.dynamo.send(new CreateTableCommand({ TableName: 'warm', BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'sk', AttributeType: 'S' }, { AttributeName: 'openPk', AttributeType: 'S' as const }, { AttributeName: 'openSk', AttributeType: 'S' as const }],
  KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
  GlobalSecondaryIndexes: [{ IndexName: 'open', KeySchema: [{ AttributeName: 'openPk', KeyType: 'HASH' }, { AttributeName: 'openSk', KeyType: 'RANGE' }], Projection: { ProjectionType: 'ALL' } }] }));
await createTables(c.dynamo, { ledgerTable: 'L', paymentsTable: 'P' });
let seq = 0;
async function rate(table: string, n: number, update = false) {
  const t = performance.now();
  const base = seq; 
  await mapBounded(Array.from({ length: n }, (_, k) => (update ? base - n + k : seq++)), 16, async (i) => {
    if (update) await c.doc.send(new UpdateCommand({ TableName: table, Key: { pk: `JOB#j${i % 100}`, sk: `RUN#${i}` }, UpdateExpression: 'SET v = v + :one, st = :s', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1, ':s': 'RUNNING' } }));
    else await c.doc.send(new PutCommand({ TableName: table, Item: { pk: `JOB#j${i % 100}`, sk: `RUN#${i}`, v: i, openPk: 'OPEN', openSk: `x${i}` }, ConditionExpression: 'attribute_not_exists(pk)' }));
  });
  return Math.round(n / ((performance.now() - t) / 1000));
}
const w: number[] = [];
for (let k = 0; k < 4; k++) { w.push(await rate('warm', 1000)); w.push(await rate('warm', 1000, true)); }
console.log('warm-up (no stream) put/update per 1k:', w.join(' '));
const r: number[] = [];
for (let k = 0; k < 10; k++) r.push(await rate('L', 1000));
console.log('ledger table puts per 1k:', r.join(' '));
const u: number[] = [];
for (let k = 0; k < 3; k++) u.push(await rate('L', 1000, true));
console.log('ledger table updates (last 1k) x3:', u.join(' '));
c.dynamo.destroy(); c.sqs.destroy();
await stack.stop();
