/**
 * Cost per million short runs from measured counts and public list prices (us-east-1, on-demand,
 * as docs/performance.md states them). Marginal cost per run only: the planner's own invocations (one per
 * partition per minute) and the event source mapping's empty polls are fixed costs, reported apart.
 */
export const PRICES = {
  region: 'us-east-1',
  /** DynamoDB on-demand, USD per write request unit. */
  dynamoWriteRequestUnit: 0.625 / 1e6,
  /** DynamoDB on-demand, USD per read request unit. */
  dynamoReadRequestUnit: 0.125 / 1e6,
  /** SQS standard queue, USD per request (each 64 KB chunk of a payload is one request). */
  sqsRequest: 0.4 / 1e6,
  /** Lambda arm64, USD per GB-second. */
  lambdaGbSecond: 0.0000133334,
  /** Lambda, USD per request. */
  lambdaRequest: 0.2 / 1e6,
  /** Assumed worker memory. */
  workerMemoryGb: 0.5,
} as const;

export interface PerRunCounts {
  readonly writeUnitsPerRun: number;
  readonly readUnitsPerRun: number;
  /** Scheduler's own SQS calls + the event source mapping's receives (with messages) and deletes. */
  readonly sqsRequestsPerRun: number;
  readonly invocationsPerRun: number;
  /** Billed worker time per run (ms), handler side. */
  readonly lambdaMsPerRun: number;
}

export interface CostBreakdown {
  readonly dynamo: number;
  readonly sqs: number;
  readonly lambdaRequests: number;
  readonly lambdaDuration: number;
  readonly total: number;
}

/** USD per million runs. */
export function costPerMillionRuns(counts: PerRunCounts): CostBreakdown {
  const m = 1e6;
  const dynamo = m * (counts.writeUnitsPerRun * PRICES.dynamoWriteRequestUnit + counts.readUnitsPerRun * PRICES.dynamoReadRequestUnit);
  const sqs = m * counts.sqsRequestsPerRun * PRICES.sqsRequest;
  const lambdaRequests = m * counts.invocationsPerRun * PRICES.lambdaRequest;
  const lambdaDuration = m * (counts.lambdaMsPerRun / 1000) * PRICES.workerMemoryGb * PRICES.lambdaGbSecond;
  return { dynamo, sqs, lambdaRequests, lambdaDuration, total: dynamo + sqs + lambdaRequests + lambdaDuration };
}

export function describePrices(): string {
  return (
    `prices (${PRICES.region}, list, on-demand): DynamoDB $0.625 per million write request units, $0.125 per million read request units; ` +
    `SQS $0.40 per million requests (64 KB chunks); Lambda arm64 $0.0000133334 per GB-s and $0.20 per million requests; ` +
    `worker memory ${PRICES.workerMemoryGb * 1024} MB`
  );
}
