// The live workers through the Node binding (`queue.workers()`), against a real redis-server: a
// Node worker is listed with its identity and running job; one busy with a long job stays listed,
// seen through its lease renewals (it does not fetch meanwhile); one that stops leaves the list.
// Mirrors core/tests/workers.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, sleep, useRedis } from './harness.mjs';

const redis = useRedis();

/** Waits until the async `cond` resolves true. */
async function until(cond, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A handler that holds its job until `release()`. */
function held() {
  let release;
  const done = new Promise((resolve) => {
    release = resolve;
  });
  return { handler: () => done, release };
}

test('a node worker is listed with its identity and running job', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.deepEqual(await queue.workers(), []);
  const { handler, release } = held();
  await queue.enqueue(Buffer.from('long'), { id: 'long-1' });
  const worker = queue.work(handler, { concurrency: 2, leaseMs: 600, pollIntervalMs: 50 });
  try {
    await until(async () => (await queue.workers())[0]?.running === 1, 'the worker is listed running its job');
    const [me] = await queue.workers();
    assert.equal(me.queue, queue.name);
    assert.equal(me.pid, process.pid);
    assert.equal(me.runtime, 'node');
    assert.equal(me.concurrency, 2);
    assert.deepEqual(me.runningIds, ['long-1']);
    assert.equal(typeof me.host, 'string');
    assert.ok(me.startedAtMs > 0 && me.lastSeenAtMs > 0, JSON.stringify(me));
  } finally {
    release();
    await worker.shutdown();
  }
  assert.deepEqual(await queue.workers(), []);
});

test('a node worker holding a long job stays listed through its lease renewals', async () => {
  const { queue } = freshJobQueue(redis.url);
  const { handler, release } = held();
  await queue.enqueue(Buffer.from('long'), { id: 'long-2' });
  // One slot, busy: no fetch while the job runs; the 600 ms lease is renewed every 200 ms, and
  // each renewal says the worker is alive (a fetch's report comes every 15 s).
  const worker = queue.work(handler, { concurrency: 1, leaseMs: 600, pollIntervalMs: 50 });
  try {
    await until(async () => (await queue.workers())[0]?.running === 1, 'the worker is listed running its job');
    const first = (await queue.workers())[0].lastSeenAtMs;
    await sleep(300);
    await until(async () => (await queue.workers())[0]?.lastSeenAtMs > first, 'a renewal says it is alive', 3000);
    assert.deepEqual((await queue.workers())[0].runningIds, ['long-2']);
  } finally {
    release();
    await worker.shutdown();
  }
});
