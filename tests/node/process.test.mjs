// Process-level behaviour, checked in child node processes: exit after shutdown, staying alive
// while consuming, run() on SIGINT/SIGTERM, and default error reporting.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, runNode, sleep, unique, useRedis } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/child.mjs');

/** Resolves once the child's stdout contains `text`. */
async function waitForOutput(readStdout, text, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!readStdout().includes(text)) {
    if (Date.now() > deadline) throw new Error(`child never printed ${JSON.stringify(text)}; stdout: ${readStdout()}`);
    await sleep(10);
  }
}

test('the process exits by itself after shutdown()', async () => {
  const t0 = Date.now();
  const res = await runNode([CHILD, 'shutdown', redis.url, unique('q')], { timeoutMs: 15_000 });
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout), { batches: 1, items: 1, failed: 0, fetchErrors: 0 });
  assert.ok(Date.now() - t0 < 10_000);
});

test('a running consumer keeps the process alive', async () => {
  let child;
  const done = runNode([CHILD, 'idle', redis.url, unique('q')], {
    onSpawn: (c, readStdout) => {
      child = c;
      child.readStdout = readStdout;
    },
  });
  await waitForOutput(() => child.readStdout(), 'ready');
  await sleep(1_000);
  assert.equal(child.exitCode, null, 'the process exited while its consumer was running');
  child.kill('SIGKILL');
  await done;
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  test(`run() shuts down gracefully on ${signal}, waiting for the running handler, and resolves with stats`, async () => {
    let child;
    const done = runNode([CHILD, 'run', redis.url, unique('q')], {
      onSpawn: (c, readStdout) => {
        child = c;
        child.readStdout = readStdout;
      },
    });
    await waitForOutput(() => child.readStdout(), 'handling 1');
    child.kill(signal);
    const res = await done;
    assert.equal(res.code, 0, `exit ${res.code} ${res.signal}; stderr: ${res.stderr}`);
    const lines = res.stdout.trim().split('\n');
    assert.ok(lines.indexOf('handled') >= 0 && lines.indexOf('handled') < lines.length - 1, res.stdout);
    const stats = JSON.parse(lines.at(-1).replace(/^stats /, ''));
    assert.deepEqual(stats, { batches: 1, items: 1, failed: 0, fetchErrors: 0 });
    assert.match(res.stderr, new RegExp(`tideq: ${signal} received: shutting down gracefully, waiting up to 5000 ms for 1 running batch handler;`));
  });
}

test('without onError a handler failure is printed with console.error, stack included', async () => {
  const res = await runNode([CHILD, 'throws', redis.url, unique('q')]);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout), { batches: 1, items: 1, failed: 1, fetchErrors: 0 });
  assert.match(res.stderr, /tideq: handler failed on a batch of 1 item\(s\) from group "g"/);
  assert.match(res.stderr, /Error: boom from the handler/);
  assert.match(res.stderr, /at brokenHandler .*child\.mjs/);
});
