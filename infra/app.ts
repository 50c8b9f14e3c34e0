#!/usr/bin/env node
/** CDK entry point (cdk.json "app"): `npm run synth`, `npx cdk deploy`. */
import { createSchedulerApp } from './scheduler-app.js';
import { synthOrExit } from './synth-cli.js';

synthOrExit(() => createSchedulerApp().app);
