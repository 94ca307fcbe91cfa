// Shared limiters from Node: `Limiter` defines and takes from the core's limiters (the rules are
// tested in core/tests/limiters.rs and limiters_processes.rs); these check the API, `OverLimit`
// snoozing a job, and bad arguments refused with nothing written.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, tideq, useRedis } from './harness.mjs';

const redis = useRedis();

test('a concurrency limit admits n holders; a released slot is taken again', async () => {
  const { client } = freshJobQueue(redis.url);
  const lim = new tideq.Limiter(client);
  await lim.concurrent('api', 2, 30_000);
  const a = await lim.acquire('api');
  assert.ok(a.leaseDeadlineMs > Date.now() - 60_000);
  const b = await lim.acquire('api');
  const over = await lim.acquire('api').then(() => null, (e) => e);
  assert.ok(over instanceof tideq.OverLimit && over instanceof tideq.Snooze, String(over));
  assert.equal(over.limiter, 'api');
  assert.ok(over.delayMs > 0 && over.delayMs <= 400, String(over.delayMs));
  assert.equal(await b.extend(10_000), true);
  assert.equal(await b.release(), true);
  assert.equal(await lim.run('api', async () => 7), 7);
  assert.equal(await a.release(), true);
});

test('a window and a bucket take from their limit and tell the wait', async () => {
  const { client } = freshJobQueue(redis.url);
  const lim = new tideq.Limiter(client);
  await lim.window('w', 1, 60_000);
  const w = await lim.acquire('w');
  assert.equal(w.leaseDeadlineMs, null);
  const over = await lim.acquire('w').then(() => null, (e) => e);
  assert.ok(over.delayMs > 59_000 && over.delayMs <= 60_000, String(over.delayMs));
  await lim.bucket('b', 10, 1);
  await lim.acquire('b', 10);
  const wait = await lim.acquire('b', 3).then(() => null, (e) => e);
  assert.ok(wait.delayMs > 2000 && wait.delayMs <= 3000, String(wait.delayMs));
});

test('OverLimit out of a handler snoozes the job without using an attempt', async () => {
  const { queue, client } = freshJobQueue(redis.url);
  const lim = new tideq.Limiter(client);
  await lim.concurrent('one', 1, 30_000);
  const held = await lim.acquire('one');
  await queue.enqueue(Buffer.from('x'));
  const seen = [];
  const stats = await queue.run(
    async (job) => {
      seen.push(job.attempt);
      if (seen.length === 3) await held.release();
      await lim.run('one', async () => {});
    },
    { stopWhenDrained: true, pollIntervalMs: 100 },
  );
  assert.deepEqual(seen, [1, 1, 1]);
  assert.deepEqual([stats.snoozed, stats.failed, stats.completed], [2, 0, 1]);
});

test('bad arguments are refused with nothing written', async () => {
  const { client, prefix } = freshJobQueue(redis.url);
  const lim = new tideq.Limiter(client);
  const bad = [
    () => lim.concurrent('a', 0),
    () => lim.concurrent('a', -1),
    () => lim.concurrent('a', 100_001),
    () => lim.concurrent('a', 1, 0),
    () => lim.concurrent('a', 1, -5),
    () => lim.window('a', 0, 1000),
    () => lim.window('a', 1, 0),
    () => lim.bucket('a', 0, 1),
    () => lim.bucket('a', 5, 0),
    () => lim.bucket('a', 5, -1),
    () => lim.bucket('a', 5, Number.NaN),
    () => lim.concurrent('', 1),
    () => lim.concurrent('a{b}', 1),
    () => lim.concurrent('a*', 1),
    () => lim.concurrent(5, 1),
    () => lim.acquire('never-defined'),
    () => lim.acquire('a', 0),
  ];
  for (const call of bad) {
    await assert.rejects(call(), (e) => e.code === 'INVALID_ARGUMENT', String(call));
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
  assert.throws(() => new tideq.Limiter({}), (e) => e.code === 'INVALID_ARGUMENT');
  await lim.concurrent('c', 2);
  await assert.rejects(lim.acquire('c', 2), /its cost is 1/);
});

test('a queue naming a limiter starts no more than it allows, across queues; null stops it', async () => {
  const { client, queue: a } = freshJobQueue(redis.url);
  const b = new tideq.Queue(`${a.name}-b`, { client });
  const lim = new tideq.Limiter(client);
  await lim.concurrent('db', 3, 60_000);
  for (const q of [a, b]) {
    await q.setLimiter('db');
    assert.equal(await q.limiterName(), 'db');
    await q.enqueueMany(Array.from({ length: 5 }, () => Buffer.from('x')));
  }
  const first = await a.leaseJobs(2);
  assert.equal(first.length, 2);
  assert.equal((await b.leaseJobs(5)).length, 1, 'one slot left of 3');
  await a.complete(first[0]);
  assert.equal((await b.leaseJobs(5)).length, 1, 'a completed job gave its slot back');
  await b.setLimiter(null);
  assert.equal(await b.limiterName(), null);
  assert.equal((await b.leaseJobs(5)).length, 3);
  await assert.rejects(() => a.setLimiter('nosuch'), (e) => e.code === 'INVALID_ARGUMENT' && /no limiter named "nosuch"/.test(e.message));
  await assert.rejects(() => a.setLimiter(5), (e) => e.code === 'INVALID_ARGUMENT');
  assert.equal(await a.limiterName(), 'db', 'a refused change wrote nothing');
});

test('a group naming a limiter never runs more of its jobs than the limit, across queues', async () => {
  const { client, queue: a } = freshJobQueue(redis.url);
  const b = new tideq.Queue(`${a.name}-b`, { client });
  const lim = new tideq.Limiter(client);
  await lim.concurrent('gdb', 2, 60_000);
  for (const q of [a, b]) {
    await q.setGroupLimiter('acme', 'gdb');
    await q.enqueueMany(Array.from({ length: 4 }, () => ({ payload: Buffer.from('x'), group: 'acme' })));
  }
  assert.equal((await a.group('acme')).limiter, 'gdb');
  const first = await a.leaseJobs(4);
  assert.equal(first.length, 2, 'two slots');
  assert.equal((await b.leaseJobs(4)).length, 0, 'the slots are taken');
  assert.deepEqual([(await b.group('acme')).ready, (await b.group('acme')).active], [4, 0], 'jobs over the limit wait in their place');
  await a.complete(first[0]);
  // b's group waits for the limiter a short while, then starts one job (its first attempt).
  let got = [];
  for (let i = 0; i < 40 && got.length === 0; i++) {
    got = await b.leaseJobs(4);
    if (got.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(got.length, 1, 'one slot back');
  assert.equal(got[0].attempt, 1);
  await b.setGroupLimiter('acme', null);
  assert.equal((await b.group('acme')).limiter, null);
});

test('a group limiter never defined is refused and nothing is written', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await assert.rejects(() => queue.setGroupLimiter('acme', 'nosuch'), (e) => e.code === 'INVALID_ARGUMENT' && /no limiter named "nosuch"/.test(e.message));
  await assert.rejects(() => queue.setGroupLimiter('acme', 5), (e) => e.code === 'INVALID_ARGUMENT');
  await assert.rejects(() => queue.setGroupLimiter('', 'x'), (e) => e.code === 'INVALID_ARGUMENT');
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});
