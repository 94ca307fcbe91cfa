// tideq/testing under Vitest (issue 42, item 1): the globalSetup of docs/testing.md starts a
// private redis-server that the test files use (they inherit TIDEQ_REDIS_URL), and fake and
// inline modes work in beforeEach/afterEach. Runs Vitest (a devDependency) on
// tests/node/vitest_app.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, runNode } from './harness.mjs';

test('Vitest: the globalSetup starts a private redis-server for the test files, and the test modes run in them', async () => {
  const vitest = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const config = join(ROOT, 'tests', 'node', 'vitest_app', 'vitest.config.mjs');
  const { code, stdout, stderr } = await runNode([vitest, 'run', '--config', config, '--reporter', 'verbose', '--color', 'false'], {
    env: { TIDEQ_OUTER_REDIS_URL: process.env.TIDEQ_REDIS_URL ?? '', NO_COLOR: '1' },
    timeoutMs: 120_000,
  });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  for (const name of ['a worker runs the job on the private redis-server', 'records the enqueue, and drain runs it', 'runs the job in its enqueue']) {
    assert.ok(stdout.includes(name), `${name} did not run:\n${stdout}`);
  }
  assert.match(stdout, /Tests\s+3 passed \(3\)/);
});
