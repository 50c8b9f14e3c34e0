import { startLocalStack } from '../local-stack.js';
import { clientsFor } from './sandbox.js';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
const stack = await startLocalStack();
try {
  const c = clientsFor(stack);
  for (let round = 0; round < 3; round++) {
    let t = Date.now();
    for (let i = 0; i < 100; i++) await c.doc.send(new GetCommand({ TableName: stack.ledgerTable, Key: { pk: 'x', sk: String(i) } }));
    console.log('100 seq get', Date.now() - t);
    t = Date.now();
    for (let i = 0; i < 100; i++) await c.doc.send(new PutCommand({ TableName: stack.ledgerTable, Item: { pk: 'x', sk: String(i), v: i } }));
    console.log('100 seq put', Date.now() - t);
    t = Date.now();
    for (let i = 0; i < 100; i++) await c.doc.send(new UpdateCommand({ TableName: stack.ledgerTable, Key: { pk: 'x', sk: String(i) }, UpdateExpression: 'SET v = v + :one', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1 } }));
    console.log('100 seq update', Date.now() - t);
    t = Date.now();
    await Promise.all(Array.from({ length: 100 }, (_, i) => c.doc.send(new PutCommand({ TableName: stack.ledgerTable, Item: { pk: 'y', sk: String(i), v: i } }))));
    console.log('100 par put', Date.now() - t);
    t = Date.now();
    for (let i = 0; i < 50; i++) await c.sqs.send(new SendMessageCommand({ QueueUrl: stack.runQueueUrl, MessageBody: 'x' }));
    console.log('50 seq sqs send', Date.now() - t);
    t = Date.now();
    for (let i = 0; i < 20; i++) await c.sqs.send(new ReceiveMessageCommand({ QueueUrl: stack.runQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    console.log('20 seq sqs receive', Date.now() - t);
  }
} finally { await stack.stop(); }
