import * as sqs from 'aws-cdk-lib/aws-sqs';
import { createSchedulerApp } from './scheduler-app.js';
const { app, stack } = createSchedulerApp({ appProps: { outdir: '/tmp/nagout', context: { 'aws:cdk:bundling-stacks': [] } } });
new sqs.Queue(stack, 'Bad', { encryption: sqs.QueueEncryption.UNENCRYPTED });
try { app.synth(); console.log('synth OK?!'); } catch (e) { console.log('FAILED:', String(e).slice(0, 1500)); }
