#!/usr/bin/env node
/** CDK entry point (cdk.json "app"): `npm run synth`, `npx cdk deploy`. */
import { createSchedulerApp } from './scheduler-app.js';

const { app } = createSchedulerApp();
app.synth();
