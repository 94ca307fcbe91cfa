// The queue's latency through the Node binding (stats().latencyMs, group(name).latencyMs): ms the
// job next in line has been ready, counted from a delayed job's due time (not its enqueue), 0 with
// nothing ready. Bounds come from the Redis clock read around each call, never a sleep's length.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, redisTimeSync, sleep, useRedis } from './harness.mjs';

const redis = useRedis();

test('an empty queue, or one with only future jobs, has latencyMs 0', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.equal((await queue.stats()).latencyMs, 0);
  await queue.enqueue(Buffer.from('later'), { delayMs: 60_000 });
  assert.equal((await queue.stats()).latencyMs, 0);
});

test('a due delayed job counts from its due time, with no worker running', async () => {
  const { queue } = freshJobQueue(redis.url);
  const delay = 400;
  const t0 = redisTimeSync(redis.url);
  await queue.enqueue(Buffer.from('d'), { delayMs: delay });
  const t1 = redisTimeSync(redis.url);
  await sleep(800);
  const a = redisTimeSync(redis.url);
  const { latencyMs } = await queue.stats();
  const b = redisTimeSync(redis.url);
  assert.ok(latencyMs >= a - (t1 + delay) && latencyMs <= b - (t0 + delay), `${latencyMs} ms`);
  await queue.leaseJobs(1);
  assert.equal((await queue.stats()).latencyMs, 0);
});

test('a group reports its own latencyMs, the queue its oldest', async () => {
  const { queue } = freshJobQueue(redis.url);
  const t0 = redisTimeSync(redis.url);
  await queue.enqueue(Buffer.from('a'), { group: 'old' });
  const t1 = redisTimeSync(redis.url);
  await sleep(300);
  await queue.enqueue(Buffer.from('b'), { group: 'new' });
  const a = redisTimeSync(redis.url);
  const [old, young, none, stats] = [await queue.group('old'), await queue.group('new'), await queue.group('none'), await queue.stats()];
  const b = redisTimeSync(redis.url);
  assert.ok(old.latencyMs >= a - t1 && old.latencyMs <= b - t0, `${old.latencyMs} ms`);
  assert.ok(young.latencyMs < old.latencyMs);
  assert.equal(none.latencyMs, 0);
  assert.ok(stats.latencyMs >= a - t1 && stats.latencyMs <= b - t0, `${stats.latencyMs} ms`);
});
