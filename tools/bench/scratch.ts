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
await createTables(c.dynamo, { ledgerTable: 'LLL', paymentsTable: 'PPP' });
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
for (let k = 0; k < 4; k++) { await rate('warm', 1000); await rate('warm', 1000, true); }
await createTables(c.dynamo, { ledgerTable: 'AAA', paymentsTable: 'AAAp' });
console.log('ledger A fresh (1 stream table before):', await rate('AAA', 1000), await rate('AAA', 1000));
for (let k = 0; k < 8; k++) await createTables(c.dynamo, { ledgerTable: `E${k}xx`, paymentsTable: `E${k}pp` });
await createTables(c.dynamo, { ledgerTable: 'BBB', paymentsTable: 'BBBp' });
console.log('ledger B after 8 empty stream tables:', await rate('BBB', 1000), await rate('BBB', 1000));
for (let k = 0; k < 8; k++) await rate(`E${k}xx`, 1000);
await createTables(c.dynamo, { ledgerTable: 'CCC', paymentsTable: 'CCCp' });
console.log('ledger C after filling them with 1k each:', await rate('CCC', 1000), await rate('CCC', 1000));
await new Promise((r) => setTimeout(r, 20000));
console.log('ledger C after 20 s idle:', await rate('CCC', 1000), await rate('CCC', 1000));
c.dynamo.destroy(); c.sqs.destroy();
await stack.stop();
