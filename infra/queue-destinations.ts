/**
 * SQS queues as failure destinations that grant the function only sqs:SendMessage on the queue:
 * all that Lambda needs to deliver a failure record. CDK's SqsDlq and SqsDestination grant
 * `grantSendMessages` (SendMessage, GetQueueAttributes, GetQueueUrl), two actions nothing calls.
 */
import type { Construct } from 'constructs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

/** The IAM action a failure destination queue needs (FUNCTION_ACCESS service rows). */
export const FAILURE_DESTINATION_ACTIONS = ['sqs:SendMessage'] as const;

/** On-failure destination of an asynchronous invocation (EventInvokeConfig). */
export class QueueFailureDestination implements lambda.IDestination {
  constructor(private readonly queue: sqs.IQueue) {}

  bind(_scope: Construct, fn: lambda.IFunction): lambda.DestinationConfig {
    this.queue.grant(fn, ...FAILURE_DESTINATION_ACTIONS);
    return { destination: this.queue.queueArn };
  }
}

/** On-failure destination of a stream event source mapping. */
export class QueueEventSourceDlq implements lambda.IEventSourceDlq {
  constructor(private readonly queue: sqs.IQueue) {}

  bind(_target: lambda.IEventSourceMapping, targetHandler: lambda.IFunction): lambda.DlqDestinationConfig {
    this.queue.grant(targetHandler, ...FAILURE_DESTINATION_ACTIONS);
    return { destination: this.queue.queueArn };
  }
}
