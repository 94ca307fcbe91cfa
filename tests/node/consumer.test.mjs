// The consumer runtime through the Node binding: JS handlers (sync and async) called by the
// core's fetch loop, error reporting, shutdown, dedicated groups.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshQueue, sleep, useRedis } from './harness.mjs';

const redis = useRedis();

/** Pushes `perGroup` unique items into each of `groups`; returns every item as a string. */
async function fill(queue, groups, perGroup) {
  const pairs = [];
  for (const g of groups) for (let i = 0; i < perGroup; i++) pairs.push([g, `${g}/${i}`]);
  await queue.pushMany(pairs);
  return pairs.map(([, item]) => item);
}

const groupsNamed = (n, p = 'g') => Array.from({ length: n }, (_, i) => `${p}${i}`);

async function waitFor(cond, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

for (const kind of ['sync', 'async']) {
  test(`a consumer with ${kind} handlers delivers every item exactly once at concurrency 4`, async () => {
    const { queue } = freshQueue(redis.url, { capacity: 10_000 });
    const expected = await fill(queue, groupsNamed(20), 100);
    const seen = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const handler =
      kind === 'sync'
        ? (group, items) => {
            assert.equal(typeof group, 'string');
            for (const item of items) seen.push(item.toString());
          }
        : async (group, items) => {
            inFlight++;
            maxInFlight = Math.max(maxInFlight, inFlight);
            await sleep(2);
            for (const item of items) seen.push(item.toString());
            inFlight--;
          };
    const consumer = queue.consume(handler, { concurrency: 4, batchSize: 32, stopWhenEmpty: true });
    const stats = await consumer.join();
    assert.equal(seen.length, expected.length);
    assert.deepEqual([...seen].sort(), [...expected].sort());
    assert.equal(new Set(seen).size, seen.length, 'an item was delivered twice');
    assert.equal(stats.items, expected.length);
    assert.equal(stats.failed, 0);
    assert.equal(consumer.running, false);
    if (kind === 'async') {
      assert.ok(maxInFlight <= 4, `maxInFlight ${maxInFlight}`);
      assert.ok(maxInFlight > 1, 'handlers never overlapped at concurrency 4');
    }
    assert.equal((await queue.stats()).delivered, expected.length);
  });
}

test('a handler that throws or rejects is reported and counted, and the consumer carries on', async () => {
  const { queue } = freshQueue(redis.url);
  await fill(queue, ['ok1', 'throws', 'ok2', 'rejects', 'ok3'], 3);
  const delivered = [];
  const reported = [];
  const consumer = queue.consume(
    async (group, items) => {
      if (group === 'throws') throw new Error(`sync-ish failure in ${group}`);
      if (group === 'rejects') return Promise.reject(new TypeError('async failure'));
      delivered.push(...items.map(String));
    },
    { stopWhenEmpty: true, onError: (err, group) => reported.push({ err, group }) },
  );
  const stats = await consumer.join();
  assert.equal(delivered.length, 9);
  assert.deepEqual(stats, { batches: 5, items: 15, failed: 2, fetchErrors: 0 });
  assert.deepEqual(reported.map((r) => r.group).sort(), ['rejects', 'throws']);
  const thrown = reported.find((r) => r.group === 'throws').err;
  assert.ok(thrown instanceof Error);
  assert.equal(thrown.message, 'sync-ish failure in throws');
  assert.match(thrown.stack, /consumer\.test\.mjs/);
  assert.ok(reported.find((r) => r.group === 'rejects').err instanceof TypeError);
  // At-most-once: the failed batches are gone.
  assert.equal(await queue.len('throws'), 0);
});

test('a synchronous throw in a plain function handler does not stop the consumer', async () => {
  const { queue } = freshQueue(redis.url);
  await fill(queue, ['a', 'b', 'c'], 2);
  let calls = 0;
  const reported = [];
  const consumer = queue.consume(
    (group) => {
      calls++;
      if (group === 'b') throw new RangeError('plain throw');
    },
    { stopWhenEmpty: true, onError: (err, group) => reported.push([err.name, group]) },
  );
  const stats = await consumer.join();
  assert.equal(calls, 3);
  assert.equal(stats.failed, 1);
  assert.deepEqual(reported, [['RangeError', 'b']]);
});

test('graceful shutdown waits for a running handler to finish', async () => {
  const { queue } = freshQueue(redis.url);
  await queue.push('g', 'slow');
  let started = false;
  let finished = false;
  const consumer = queue.consume(async () => {
    started = true;
    await sleep(300);
    finished = true;
  });
  await waitFor(() => started, 'the handler to start');
  assert.equal(consumer.running, true);
  const t0 = Date.now();
  const stats = await consumer.shutdown();
  assert.equal(finished, true, 'shutdown resolved before the running handler finished');
  assert.ok(Date.now() - t0 >= 200);
  assert.equal(stats.batches, 1);
  assert.equal(consumer.running, false);
  // Once stopped it takes nothing more.
  await queue.push('g', 'after');
  await sleep(100);
  assert.equal(await queue.len('g'), 1);
});

test('shutdown abandons a handler that outlives graceMs', async () => {
  const { queue } = freshQueue(redis.url);
  await queue.push('g', 'stuck');
  let started = false;
  const consumer = queue.consume(
    async () => {
      started = true;
      await sleep(2_000);
    },
    { graceMs: 100 },
  );
  await waitFor(() => started, 'the handler to start');
  const t0 = Date.now();
  await consumer.shutdown();
  assert.ok(Date.now() - t0 < 1_500, `shutdown took ${Date.now() - t0} ms`);
  assert.equal(consumer.running, false);
});

test('abort() stops at once, abandoning a running handler without waiting for graceMs', async () => {
  const { queue } = freshQueue(redis.url);
  await queue.push('g', 'stuck');
  let started = false;
  const consumer = queue.consume(
    async () => {
      started = true;
      await sleep(2_000);
    },
    { graceMs: 10_000 },
  );
  await waitFor(() => started, 'the handler to start');
  const t0 = Date.now();
  const stopping = consumer.shutdown();
  await sleep(100);
  assert.equal(consumer.running, true, 'shutdown waits for the handler within graceMs');
  consumer.abort();
  const stats = await stopping;
  assert.ok(Date.now() - t0 < 1_500, `abort took ${Date.now() - t0} ms`);
  assert.equal(consumer.running, false);
  assert.equal(consumer.error, null);
  assert.deepEqual(stats, { batches: 0, items: 0, failed: 0, fetchErrors: 0 });
});

test('dedicated consumers serve only their groups, and general ones skip excluded groups', async () => {
  const { queue } = freshQueue(redis.url);
  await fill(queue, ['hot1', 'hot2', 'cold1', 'cold2', 'cold3'], 10);
  const byConsumer = { dedicated: new Set(), general: new Set() };
  const dedicated = queue.consume((g) => byConsumer.dedicated.add(g), { groups: ['hot1', 'hot2'], stopWhenEmpty: true });
  const general = queue.consume((g) => byConsumer.general.add(g), {
    exclude: ['hot1', 'hot2'],
    stopWhenEmpty: true,
    batchSize: 3,
  });
  const [d, g] = await Promise.all([dedicated.join(), general.join()]);
  assert.deepEqual([...byConsumer.dedicated].sort(), ['hot1', 'hot2']);
  assert.deepEqual([...byConsumer.general].sort(), ['cold1', 'cold2', 'cold3']);
  assert.equal(d.items, 20);
  assert.equal(g.items, 30);
});

test('stopWhenEmpty ends the consumer once the queue is drained, and a waiting consumer wakes on a push', async () => {
  const { queue } = freshQueue(redis.url);
  const empty = queue.consume(() => {}, { stopWhenEmpty: true });
  assert.deepEqual(await empty.join(), { batches: 0, items: 0, failed: 0, fetchErrors: 0 });

  // Without stopWhenEmpty the consumer waits; a push wakes it well before pollIntervalMs.
  const got = [];
  const waiting = queue.consume((g, items) => got.push(...items.map(String)), { pollIntervalMs: 5_000 });
  await sleep(100);
  const t0 = Date.now();
  await queue.push('late', 'wake up');
  await waitFor(() => got.length === 1, 'the late item');
  assert.ok(Date.now() - t0 < 2_000, `woke after ${Date.now() - t0} ms`);
  const stats = await waiting.shutdown();
  assert.equal(stats.items, 1);
});

test('consumer stats count batches, items and failures while it runs', async () => {
  const { queue } = freshQueue(redis.url);
  await fill(queue, ['a'], 10);
  const consumer = queue.consume(
    (g, items) => {
      if (items[0].toString() === 'a/4') throw new Error('one bad batch');
    },
    { batchSize: 4, stopWhenEmpty: true, onError: () => {} },
  );
  const final = await consumer.join();
  assert.deepEqual(final, { batches: 3, items: 10, failed: 1, fetchErrors: 0 });
  assert.deepEqual(consumer.stats(), final);
  // join() after the end resolves again with the same stats; stop() is harmless.
  consumer.stop();
  assert.deepEqual(await consumer.join(), final);
  assert.deepEqual(await consumer.shutdown(), final);
});
