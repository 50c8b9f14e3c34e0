/**
 * Dashboard and alarms (DESIGN §10). The metrics are the ones the functions publish with
 * Powertools Metrics (EMF): namespace FencedScheduler, dimensions service=scheduler and
 * stack=<stack name> (so one stack's alarms never see another's runs), names from MetricName in
 * shared/runtime/observability.ts. Every alarm notifies one SNS topic, given or created; their meaning and
 * the response to each are in the README ("Operating").
 */
import { Annotations, ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { MetricName } from '../../shared/runtime/observability.js';
import { METRICS_NAMESPACE, PARTITION_DIMENSION, schedulerDimensions } from '../../shared/runtime/powertools.js';
import { MAX_PLANNER_PARTITIONS } from './planner-function.js';
import { durationIn, integerIn, validateProps, type PropRule } from '../validation.js';

/**
 * MetricName.OldestOpenRunAge: age in ms of the oldest open (non-terminal) run whose slot is past
 * the sweep grace, among those a planner partition's sweep read in its tick (0 when none); one
 * value per partition and tick. A gauge, not a count: alarmed on its Maximum, with its own widget.
 */
export const OLDEST_OPEN_RUN_AGE = MetricName.OldestOpenRunAge;

/** Gauges published every planner tick (alarmed and graphed on their Maximum, never summed). */
const GAUGES: ReadonlySet<string> = new Set([MetricName.OldestOpenRunAge, MetricName.OpenDeadRuns, MetricName.JobsPausedByFailure]);

/** Metrics observed in milliseconds (shown as percentiles); every other MetricName is a count. */
const LATENCY_METRICS: ReadonlySet<string> = new Set([
  MetricName.PlannerLag,
  MetricName.TriggerLag,
  MetricName.LateStartLag,
  MetricName.HeartbeatLatency,
  MetricName.RunDuration,
]);

/** Dashboard rows of counters; a MetricName in no group lands in "Other scheduler metrics". */
const COUNT_GROUPS: readonly { title: string; names: readonly string[] }[] = [
  {
    title: 'Planner: slots and sweeps',
    names: [MetricName.SlotsMaterialized, MetricName.SlotsSkipped, MetricName.SlotsMisfired, MetricName.RunsSwept],
  },
  {
    title: 'Runs by outcome',
    names: [MetricName.RunsSucceeded, MetricName.RunsRetried, MetricName.RunsUnknown, MetricName.RunsDead, MetricName.RunsYielded],
  },
  {
    title: 'Contention, duplicates and fencing',
    names: [
      MetricName.ClaimConflicts,
      MetricName.DuplicateDeliveries,
      MetricName.Takeovers,
      MetricName.FencingRejections,
      MetricName.LeaseLost,
      MetricName.PoisonMessages,
      MetricName.WorkerRecordErrors,
    ],
  },
];

/** Alarm keys, also the suffix of each alarm's name (`<stack>-<key>`). */
export const AlarmKey = {
  DeadLetterQueueNotEmpty: 'dlq-not-empty',
  RunsDead: 'runs-dead',
  PlannerErrors: 'planner-errors',
  PlannerSilent: 'planner-silent',
  PlannerFailedTicks: 'planner-failed-ticks',
  TriggerLagHigh: 'trigger-lag-p99',
  OldestOpenRunAgeHigh: 'oldest-open-run-age',
  WorkerThrottles: 'worker-throttles',
  WorkerRecordErrors: 'worker-record-errors',
  OutboxRelayErrors: 'outbox-relay-errors',
  OutboxRelayFailedBatches: 'outbox-relay-failed-batches',
  /** A job paused itself after `pauseOnFailure` consecutive DEAD runs. */
  JobPausedOnFailure: 'job-paused-on-failure',
  /** The sweeper stopped re-dispatching a run nobody ever claimed (it waits for an operator). */
  RunsStuck: 'runs-stuck',
  /** Open runs of a job removed from the config (they wait for `ops resolve`). */
  OrphanedOpenRuns: 'orphaned-open-runs',
} as const;
export type AlarmKey = (typeof AlarmKey)[keyof typeof AlarmKey];

/** Alarms that exist only when the outbox relay's function / failure queue are passed in. */
export const OUTBOX_RELAY_ALARM_KEYS = [AlarmKey.OutboxRelayErrors, AlarmKey.OutboxRelayFailedBatches] as const;
/** Alarms that exist only when the planner's failure queue is passed in. */
export const PLANNER_FAILURE_ALARM_KEYS = [AlarmKey.PlannerFailedTicks] as const;
type OptionalAlarmKey = (typeof OUTBOX_RELAY_ALARM_KEYS)[number] | (typeof PLANNER_FAILURE_ALARM_KEYS)[number];

export interface ObservabilityProps {
  /** The planner function (errors and invocations). */
  readonly plannerFunction: lambda.IFunction;
  /**
   * The planner's on-failure destination: records of ticks that failed or were dropped as stale.
   * @default no planner-failed-ticks alarm
   */
  readonly plannerFailureQueue?: sqs.IQueue;
  /** The worker function (errors, throttles). */
  readonly workerFunction: lambda.IFunction;
  /** The run queue (depth and age on the dashboard). */
  readonly runQueue: sqs.IQueue;
  /** The dead-letter queue (depth alarm). */
  readonly deadLetterQueue: sqs.IQueue;
  /**
   * The outbox relay function (errors alarm, dashboard widget).
   * @default no outbox relay errors alarm or function metrics
   */
  readonly outboxRelayFunction?: lambda.IFunction;
  /**
   * The outbox relay's on-failure queue (depth alarm, dashboard widget).
   * @default no outbox relay failed-batches alarm
   */
  readonly outboxRelayFailureQueue?: sqs.IQueue;
  /**
   * Topic that receives alarm and OK notifications, instead of the one this construct creates.
   * Its policy (and its key's, if encrypted) must let cloudwatch.amazonaws.com publish.
   * @default a KMS-encrypted topic that only this stack's alarms may publish to
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * E-mail address subscribed to the alarm topic.
   * @default no subscription
   */
  readonly alarmEmail?: string;
  /**
   * Alarm when the p99 of TriggerLag (handler start − slot) over 5 minutes exceeds this.
   * @default Duration.seconds(10)
   */
  readonly triggerLagThreshold?: Duration;
  /**
   * Alarm when the oldest open run is older than this.
   * @default Duration.minutes(15)
   */
  readonly oldestOpenRunAgeThreshold?: Duration;
  /**
   * Alarm when the planner has not been invoked for this long (missing data is breaching).
   * @default Duration.minutes(5)
   */
  readonly plannerSilencePeriod?: Duration;
  /**
   * Planner partitions: each has its own planner-silent alarm on its completed ticks.
   * @default 1
   */
  readonly plannerPartitions?: number;
  /**
   * Name of the CloudWatch dashboard.
   * @default '<stack name>-scheduler'
   */
  readonly dashboardName?: string;
}

interface Resolved {
  readonly plannerPartitions: number;
  readonly triggerLagThreshold: Duration;
  readonly oldestOpenRunAgeThreshold: Duration;
  readonly plannerSilencePeriod: Duration;
  readonly alarmEmail?: string;
  readonly dashboardName: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const RULES: readonly PropRule<Resolved>[] = [
  { prop: 'plannerPartitions', ...integerIn(1, MAX_PLANNER_PARTITIONS) },
  { prop: 'triggerLagThreshold', ...durationIn(Duration.millis(1), Duration.hours(1)) },
  { prop: 'oldestOpenRunAgeThreshold', ...durationIn(Duration.minutes(1), Duration.days(14)) },
  // CloudWatch periods of 1 minute or more are whole minutes; one day bounds the evaluation.
  {
    prop: 'plannerSilencePeriod',
    must: 'a whole number of minutes in [2 minutes, 1 day]',
    ok: (value: Duration) => value.toSeconds() % 60 === 0 && value.toMinutes() >= 2 && value.toMinutes() <= 1440,
  },
  { prop: 'alarmEmail', must: 'an e-mail address', ok: (value: string) => EMAIL.test(value) },
  { prop: 'dashboardName', must: 'a name of 1-255 characters [A-Za-z0-9_-]', ok: (value: string) => /^[A-Za-z0-9_-]{1,255}$/.test(value) },
];

/** A scheduler metric (EMF) of one stack: namespace FencedScheduler, dimensions service=scheduler and stack. */
export function schedulerMetric(
  stackName: string,
  metricName: string,
  options: { statistic?: string; period?: Duration; label?: string; dimensions?: Record<string, string> } = {},
): cw.Metric {
  return new cw.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { ...schedulerDimensions(stackName), ...options.dimensions },
    statistic: options.statistic ?? (LATENCY_METRICS.has(metricName) ? 'p99' : 'Sum'),
    period: options.period ?? Duration.minutes(1),
    label: options.label,
  });
}

export class Observability extends Construct {
  readonly dashboard: cw.Dashboard;
  readonly alarms: Readonly<Record<Exclude<AlarmKey, OptionalAlarmKey>, cw.Alarm> & Partial<Record<OptionalAlarmKey, cw.Alarm>>>;
  /** Where every alarm notifies (alarm and OK). */
  readonly alarmTopic: sns.ITopic;
  /** planner-silent per partition (index = partition); alarms.planner-silent is partition 0's. */
  readonly plannerSilentAlarms: readonly cw.Alarm[];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const stackName = Stack.of(this).stackName;
    const resolved: Resolved = {
      plannerPartitions: props.plannerPartitions ?? 1,
      triggerLagThreshold: props.triggerLagThreshold ?? Duration.seconds(10),
      oldestOpenRunAgeThreshold: props.oldestOpenRunAgeThreshold ?? Duration.minutes(15),
      plannerSilencePeriod: props.plannerSilencePeriod ?? Duration.minutes(5),
      alarmEmail: props.alarmEmail,
      dashboardName: props.dashboardName ?? `${stackName}-scheduler`,
    };
    validateProps(`Observability "${id}"`, resolved, RULES);

    this.alarmTopic = props.alarmTopic ?? this.createAlarmTopic();
    if (props.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    if (!props.alarmEmail && !props.alarmTopic) {
      // Synth prints it: alarms that reach nobody look like a quiet system.
      Annotations.of(this).addWarningV2(
        'fenced-scheduler:alarm-topic-without-subscriber',
        'The alarm topic has no subscriber: no alarm reaches anyone. Subscribe to the AlarmTopicArn output (e-mail, chat, paging), or deploy with -c alarmEmail=you@example.com or -c alarmTopicArn=<your topic ARN>.',
      );
    }
    const metric = (metricName: string, options: Parameters<typeof schedulerMetric>[2] = {}) =>
      schedulerMetric(stackName, metricName, options);

    const fiveMinutes = Duration.minutes(5);
    // Alarms use unlabelled metrics (classic alarm form); the dashboard adds labels.
    const dlqDepth = props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1) });
    const relayFailureDepth = props.outboxRelayFailureQueue?.metricApproximateNumberOfMessagesVisible({
      statistic: 'Maximum',
      period: Duration.minutes(1),
    });
    const plannerFailureDepth = props.plannerFailureQueue?.metricApproximateNumberOfMessagesVisible({
      statistic: 'Maximum',
      period: Duration.minutes(1),
    });
    const oldestOpenRunAge = metric(OLDEST_OPEN_RUN_AGE, { statistic: 'Maximum', period: fiveMinutes });
    const triggerLagP99 = metric(MetricName.TriggerLag, { statistic: 'p99', period: fiveMinutes });

    /**
     * Every alarm fires on the first period above its threshold (default: anything above 0) and
     * treats missing data as fine (no datapoint means nothing happened), unless it says otherwise.
     */
    type AlarmSpec = Partial<Omit<cw.CreateAlarmOptions, 'alarmName' | 'alarmDescription'>> & { readonly metric: cw.IMetric };
    const alarm = (key: AlarmKey, description: string, spec: AlarmSpec, suffix?: string): cw.Alarm => {
      const { metric, ...overrides } = spec;
      const name = suffix ? `${key}-${suffix}` : key;
      const created = new cw.Alarm(this, `Alarm-${name}`, {
        metric,
        alarmName: `${stackName}-${name}`,
        alarmDescription: `${description} Runbook: README "Operating", alarm ${key}.`,
        threshold: 0,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
        ...overrides,
      });
      created.addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
      created.addOkAction(new cwActions.SnsAction(this.alarmTopic));
      return created;
    };

    // One alarm per partition on its own completed ticks: the sum over every partition's rule
    // would stay above zero while one partition is silent (its rule disabled, its ticks failing).
    const plannerSilent = Array.from({ length: resolved.plannerPartitions }, (_, partition) => {
      const which = resolved.plannerPartitions === 1 ? 'The planner' : `Planner partition ${partition} of ${resolved.plannerPartitions}`;
      return alarm(
        AlarmKey.PlannerSilent,
        `${which} completed no tick for ${resolved.plannerSilencePeriod.toHumanString()}: its jobs' slots are not being planned or swept.`,
        {
          metric: metric(MetricName.PlannerTicks, {
            statistic: 'Sum',
            period: resolved.plannerSilencePeriod,
            dimensions: { [PARTITION_DIMENSION]: String(partition) },
          }),
          threshold: 1,
          comparisonOperator: cw.ComparisonOperator.LESS_THAN_THRESHOLD,
          // No datapoint means no completed tick: silence is exactly what this alarm is for.
          treatMissingData: cw.TreatMissingData.BREACHING,
        },
        resolved.plannerPartitions === 1 ? undefined : `p${partition}`,
      );
    });
    this.plannerSilentAlarms = plannerSilent;

    /**
     * A state that waits for a person, from a gauge every planner tick publishes: in ALARM while
     * the state lasts, OK once the operator has acted. A period without a datapoint (the planner
     * not ticking, which planner-silent reports) keeps the alarm's state rather than clearing it.
     */
    const waitingForOperator = (name: string): AlarmSpec => ({
      metric: metric(name, { statistic: 'Maximum', period: fiveMinutes }),
      treatMissingData: cw.TreatMissingData.IGNORE,
    });

    this.alarms = {
      [AlarmKey.DeadLetterQueueNotEmpty]: alarm(
        AlarmKey.DeadLetterQueueNotEmpty,
        'Messages are in the run DLQ: poison messages or crash-looping runs.',
        { metric: dlqDepth },
      ),
      [AlarmKey.RunsDead]: alarm(
        AlarmKey.RunsDead,
        'A DEAD run waits for an operator (attempts or deadline exhausted, or a non-retryable error): ops retry it, or ops resolve it --as dead to accept it.',
        waitingForOperator(MetricName.OpenDeadRuns),
      ),
      [AlarmKey.JobPausedOnFailure]: alarm(
        AlarmKey.JobPausedOnFailure,
        'A job paused itself after pauseOnFailure consecutive DEAD runs: it plans nothing until ops resume.',
        waitingForOperator(MetricName.JobsPausedByFailure),
      ),
      [AlarmKey.RunsStuck]: alarm(
        AlarmKey.RunsStuck,
        'The sweeper re-dispatched a run many times and nobody ever claimed it: it waits for an operator.',
        {
          metric: metric(MetricName.RunsStuck, { statistic: 'Sum', period: fiveMinutes }),
        },
      ),
      [AlarmKey.OrphanedOpenRuns]: alarm(
        AlarmKey.OrphanedOpenRuns,
        'Open runs of a job no longer in the config: no worker can run them; close them with ops resolve.',
        {
          metric: metric(MetricName.OrphanedOpenRuns, { statistic: 'Maximum', period: fiveMinutes }),
        },
      ),
      [AlarmKey.PlannerErrors]: alarm(AlarmKey.PlannerErrors, 'The planner function failed.', {
        metric: props.plannerFunction.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
      }),
      [AlarmKey.PlannerSilent]: plannerSilent[0]!,
      ...(plannerFailureDepth && {
        [AlarmKey.PlannerFailedTicks]: alarm(
          AlarmKey.PlannerFailedTicks,
          'A planner tick failed or waited longer than one tick and was dropped (no retries): its record is in the planner failure queue.',
          { metric: plannerFailureDepth },
        ),
      }),
      [AlarmKey.TriggerLagHigh]: alarm(
        AlarmKey.TriggerLagHigh,
        `Runs start late: TriggerLag p99 over 5 minutes is above ${resolved.triggerLagThreshold.toHumanString()}.`,
        { metric: triggerLagP99, threshold: resolved.triggerLagThreshold.toMilliseconds() },
      ),
      [AlarmKey.OldestOpenRunAgeHigh]: alarm(
        AlarmKey.OldestOpenRunAgeHigh,
        `A run has been open (not terminal) for more than ${resolved.oldestOpenRunAgeThreshold.toHumanString()}.`,
        { metric: oldestOpenRunAge, threshold: resolved.oldestOpenRunAgeThreshold.toMilliseconds() },
      ),
      [AlarmKey.WorkerThrottles]: alarm(AlarmKey.WorkerThrottles, 'The worker function was throttled: runs wait for concurrency.', {
        metric: props.workerFunction.metricThrottles({ statistic: 'Sum', period: fiveMinutes }),
      }),
      [AlarmKey.WorkerRecordErrors]: alarm(
        AlarmKey.WorkerRecordErrors,
        'Worker records failed with an error (ledger unreachable, throttling beyond retries, a bug): each is redelivered by SQS, and lands in the DLQ if it keeps failing.',
        { metric: metric(MetricName.WorkerRecordErrors, { statistic: 'Sum', period: fiveMinutes }) },
      ),
      ...(props.outboxRelayFunction && {
        [AlarmKey.OutboxRelayErrors]: alarm(
          AlarmKey.OutboxRelayErrors,
          'The outbox relay function failed (crash or timeout): outbox events are retried and delayed.',
          {
            metric: props.outboxRelayFunction.metricErrors({ statistic: 'Sum', period: fiveMinutes }),
          },
        ),
      }),
      ...(relayFailureDepth && {
        [AlarmKey.OutboxRelayFailedBatches]: alarm(
          AlarmKey.OutboxRelayFailedBatches,
          'The outbox relay gave up on stream records (retries or record age exhausted): their events were not published.',
          { metric: relayFailureDepth },
        ),
      }),
    };

    this.dashboard = new cw.Dashboard(this, 'Dashboard', {
      dashboardName: resolved.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cw.AlarmStatusWidget({
        title: 'Scheduler alarms',
        alarms: [...new Set([...Object.values(this.alarms), ...plannerSilent])],
        width: 24,
        height: 3,
      }),
    );
    const grouped = new Set(COUNT_GROUPS.flatMap((group) => group.names));
    // OldestOpenRunAge is a gauge with its own widget, not a counter.
    const others = Object.values(MetricName as Record<string, string>).filter(
      (name) => !grouped.has(name) && !LATENCY_METRICS.has(name) && !GAUGES.has(name) && name !== MetricName.PlannerTicks,
    );
    const countGroups = others.length > 0 ? [...COUNT_GROUPS, { title: 'Other scheduler metrics', names: others }] : COUNT_GROUPS;
    this.dashboard.addWidgets(
      ...countGroups.map(
        (group) =>
          new cw.GraphWidget({
            title: group.title,
            left: group.names.map((name) => metric(name, { statistic: 'Sum', label: name })),
            width: 8,
            height: 6,
          }),
      ),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Start lag and planner lag (ms)',
        left: [
          metric(MetricName.TriggerLag, { statistic: 'p50', label: 'TriggerLag p50' }),
          metric(MetricName.TriggerLag, { statistic: 'p99', label: 'TriggerLag p99' }),
          metric(MetricName.PlannerLag, { statistic: 'p99', label: 'PlannerLag p99' }),
        ],
        // Late starts (catch-up, backfill, manual, revived runs) are late by construction: their
        // own axis, so hours-old backfills do not flatten the trigger lag the alarm watches.
        right: [metric(MetricName.LateStartLag, { statistic: 'p99', label: 'LateStartLag p99' })],
        leftAnnotations: [{ value: resolved.triggerLagThreshold.toMilliseconds(), label: 'trigger lag alarm' }],
        width: 8,
        height: 6,
      }),
      new cw.GraphWidget({
        title: 'Run duration and heartbeat latency (ms)',
        left: [
          metric(MetricName.RunDuration, { statistic: 'p50', label: 'RunDuration p50' }),
          metric(MetricName.RunDuration, { statistic: 'p99', label: 'RunDuration p99' }),
        ],
        right: [metric(MetricName.HeartbeatLatency, { statistic: 'p99', label: 'HeartbeatLatency p99' })],
        width: 8,
        height: 6,
      }),
      new cw.GraphWidget({
        title: 'Oldest open run age (ms)',
        left: [oldestOpenRunAge.with({ label: 'oldest open run age (ms)' })],
        leftAnnotations: [{ value: resolved.oldestOpenRunAgeThreshold.toMilliseconds(), label: 'alarm' }],
        width: 8,
        height: 6,
      }),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Waiting for an operator',
        left: [
          metric(MetricName.OpenDeadRuns, { statistic: 'Maximum', label: 'DEAD runs not retried or resolved (max)' }),
          metric(MetricName.JobsPausedByFailure, { statistic: 'Maximum', label: 'jobs paused by failure (max)' }),
        ],
        width: 8,
        height: 6,
      }),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Queues',
        left: [
          dlqDepth.with({ label: 'DLQ visible messages' }),
          props.runQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', label: 'run queue visible' }),
          props.runQueue.metricApproximateNumberOfMessagesNotVisible({ statistic: 'Maximum', label: 'run queue in flight / delayed' }),
        ],
        right: [props.runQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', label: 'oldest message age (s)' })],
        width: 8,
        height: 6,
      }),
      new cw.GraphWidget({
        title: 'Planner function',
        left: [
          props.plannerFunction.metricInvocations({ statistic: 'Sum', label: 'invocations' }),
          props.plannerFunction.metricErrors({ statistic: 'Sum', label: 'errors' }),
          ...plannerSilent.map((_, partition) =>
            metric(MetricName.PlannerTicks, {
              statistic: 'Sum',
              label: `completed ticks, partition ${partition}`,
              dimensions: { [PARTITION_DIMENSION]: String(partition) },
            }),
          ),
          ...(plannerFailureDepth ? [plannerFailureDepth.with({ label: 'failed or dropped ticks (failure queue)' })] : []),
        ],
        right: [props.plannerFunction.metricDuration({ statistic: 'p99', label: 'duration p99' })],
        width: 8,
        height: 6,
      }),
      new cw.GraphWidget({
        title: 'Worker function',
        left: [
          props.workerFunction.metricInvocations({ statistic: 'Sum', label: 'invocations' }),
          props.workerFunction.metricErrors({ statistic: 'Sum', label: 'errors' }),
          props.workerFunction.metricThrottles({ statistic: 'Sum', label: 'throttles' }),
        ],
        right: [props.workerFunction.metricDuration({ statistic: 'p99', label: 'duration p99' })],
        width: 8,
        height: 6,
      }),
    );
    if (props.outboxRelayFunction || relayFailureDepth) {
      const relay = props.outboxRelayFunction;
      this.dashboard.addWidgets(
        new cw.GraphWidget({
          title: 'Outbox relay',
          left: [
            ...(relay
              ? [
                  relay.metricInvocations({ statistic: 'Sum', label: 'invocations' }),
                  relay.metricErrors({ statistic: 'Sum', label: 'errors' }),
                  relay.metricThrottles({ statistic: 'Sum', label: 'throttles' }),
                ]
              : []),
            ...(relayFailureDepth ? [relayFailureDepth.with({ label: 'failed batches (on-failure queue)' })] : []),
          ],
          // How far the relay is behind the ledger stream.
          right: relay ? [relay.metric('IteratorAge', { statistic: 'Maximum', label: 'iterator age max (ms)' })] : [],
          width: 8,
          height: 6,
        }),
      );
    }
  }

  /**
   * The alarm topic: KMS-encrypted (SNS requires a customer-managed key that CloudWatch may use)
   * and TLS-only. The TLS rule is a topic policy, and a topic policy replaces SNS's default one,
   * which is what lets CloudWatch publish to a topic of its account; so this policy allows
   * cloudwatch.amazonaws.com to publish, but only for this stack's alarms (`<stack>-*`) in this
   * account. Without that statement every alarm notification is refused and no e-mail arrives.
   */
  private createAlarmTopic(): sns.Topic {
    const stack = Stack.of(this);
    const fromTheseAlarms = {
      ArnLike: {
        'aws:SourceArn': stack.formatArn({
          service: 'cloudwatch',
          resource: 'alarm',
          resourceName: `${stack.stackName}-*`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      },
      StringEquals: { 'aws:SourceAccount': stack.account },
    };
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the scheduler alarm topic',
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: fromTheseAlarms,
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'Scheduler alarms',
      masterKey: key,
      enforceSSL: true,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowThisStacksAlarmsToPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromTheseAlarms,
      }),
    );
    return topic;
  }
}
