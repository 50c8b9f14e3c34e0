/**
 * The Lambda bundles replace the SDK's default credential chain with its environment link
 * (functions/lambda-credentials.ts, aliased in infra/lambda-defaults.ts). Hazards: the alias
 * silently stops applying (the bundle grows back by ~100 KB) or the substitute does not satisfy
 * the clients (every call of a deployed function fails to sign). Both are caught here by
 * bundling a client exactly as the functions are bundled and calling the local DynamoDB with it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/lambda-defaults.js';
import { lambdaBuildOptions } from '../../tools/bench/bundle.js';
import { sharedEndpoints } from '../support/stack.js';

const run = promisify(execFile);

// Calls the local DynamoDB with whatever credentials the client's default provider resolves.
const PROBE = `
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({ endpoint: process.env.PROBE_ENDPOINT, region: 'eu-west-1', maxAttempts: 1 });
try {
  const credentials = await client.config.credentials();
  await client.send(new ListTablesCommand({ Limit: 1 }));
  console.log(JSON.stringify({ ok: true, accessKeyId: credentials.accessKeyId }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, name: error.name, message: error.message }));
}
`;

describe('Lambda bundles: credentials from the environment only', () => {
  let dir: string;
  let bundle: string;
  let inputs: string[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lambda-credentials-'));
    bundle = join(dir, 'probe.mjs');
    const result = await build({
      ...lambdaBuildOptions(),
      stdin: { contents: PROBE, resolveDir: PROJECT_ROOT, loader: 'js' },
      metafile: true,
      logLevel: 'silent',
      outfile: bundle,
    });
    inputs = Object.keys(result.metafile.inputs).map((p) => relative(PROJECT_ROOT, join(PROJECT_ROOT, p)));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const probe = async (env: Record<string, string>) => {
    // A clean environment: nothing from the test process (no AWS_PROFILE, no HOME with ~/.aws).
    const { stdout } = await run(process.execPath, [bundle], {
      env: { PATH: process.env.PATH ?? '', HOME: dir, PROBE_ENDPOINT: sharedEndpoints().dynamoEndpoint, ...env },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as { ok: boolean; accessKeyId?: string; name?: string; message?: string };
  };

  it('bundles the substitute instead of the full chain', () => {
    expect(inputs.some((p) => p.endsWith('functions/lambda-credentials.ts'))).toBe(true);
    expect(
      inputs.filter(
        (p) => p.includes('credential-provider-node') || p.includes('credential-provider-sso') || p.includes('credential-provider-ini'),
      ),
    ).toEqual([]);
  });

  it('signs calls with the credentials Lambda puts in the environment', async () => {
    const result = await probe({ AWS_ACCESS_KEY_ID: 'AKIDLAMBDAROLE', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token' });
    expect(result).toEqual({ ok: true, accessKeyId: 'AKIDLAMBDAROLE' });
  });

  it('does not fall back to a shared credentials file: without environment credentials the call fails clearly', async () => {
    // The full chain would pick this profile up; the Lambda bundle must not.
    writeFileSync(join(dir, 'credentials'), '[default]\naws_access_key_id = AKIDFROMFILE\naws_secret_access_key = secret\n');
    const result = await probe({ AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials') });
    expect(result.ok).toBe(false);
    expect(result.name).toBe('CredentialsProviderError');
    expect(result.message).toMatch(/environment variable/i);
  });
});
