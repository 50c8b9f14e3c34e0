import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONG_FILES } from '../support/sequencer.js';

describe('the suite order', () => {
  it('names only files that exist, so a renamed long file cannot silently fall back to running last', () => {
    for (const file of LONG_FILES) expect(existsSync(join(import.meta.dirname, '..', '..', file)), file).toBe(true);
  });
});
