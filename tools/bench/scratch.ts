import { startLocalStack, localClientConfig } from '../local-stack.js';
import { createClients } from '../../shared/runtime.js';
import { PutCommand, UpdateCommand, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
const t0 = Date.now();
const stack = await startLocalStack();
console.log('stack up ms', Date.now() - t0);
const c = createClients({ dynamo: localClientConfig(stack.dynamoEndpoint), sqs: localClientConfig(stack.sqsEndpoint) });
c.doc.middlewareStack.add((next, context) => async (args) => {
  console.log('cmd', context.commandName, context.clientName, JSON.stringify(args.input).slice(0, 200));
  (args.input as any).ReturnConsumedCapacity = 'TOTAL';
  const out = await next(args);
  console.log('out', JSON.stringify((out.output as any).ConsumedCapacity));
  return out;
}, { step: 'initialize', name: 'x' });
await c.doc.send(new PutCommand({ TableName: stack.ledgerTable, Item: { pk: 'a', sk: 'b', openPk: 'OPEN', openSk: 'x', v: 1 }, ConditionExpression: 'attribute_not_exists(pk)' }));
await c.doc.send(new UpdateCommand({ TableName: stack.ledgerTable, Key: { pk: 'a', sk: 'b' }, UpdateExpression: 'SET v = :v REMOVE openPk', ExpressionAttributeValues: { ':v': 2 } }));
await c.doc.send(new GetCommand({ TableName: stack.ledgerTable, Key: { pk: 'a', sk: 'b' }, ConsistentRead: true }));
await c.doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: stack.ledgerTable, Item: { pk: 'c', sk: 'd' } } }, { Put: { TableName: stack.ledgerTable, Item: { pk: 'e', sk: 'd', openPk: 'OPEN', openSk: 'y' } } }] }));
try { await c.doc.send(new PutCommand({ TableName: stack.ledgerTable, Item: { pk: 'a', sk: 'b' }, ConditionExpression: 'attribute_not_exists(pk)' })); } catch (e: any) { console.log('err', e.name, JSON.stringify(e.$response?.body ? 'hasbody' : ''), Object.keys(e)); }
c.dynamo.destroy(); c.sqs.destroy();
await stack.stop();
