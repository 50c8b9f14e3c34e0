/**
 * Stands in for `@aws-sdk/credential-provider-node` inside the Lambda bundles (esbuild alias in
 * infra/lambda-defaults.ts). The SDK clients import that package's `defaultProvider`, a chain of
 * every credential source (env, SSO, ini files, web identity, process, container, IMDS) that
 * weighs about 100 KB minified. Lambda always hands the execution role's credentials to the
 * function in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, so the environment
 * link of the chain is the only one that can ever answer there. Nothing else imports this file:
 * tests, the local stack and the ops CLI keep the SDK's full chain.
 */
import { fromEnv, type FromEnvInit } from '@aws-sdk/credential-provider-env';

/** Same name and call shape as the SDK's `defaultProvider(init)`. */
export const defaultProvider = (init: FromEnvInit = {}) => fromEnv(init);
