// The queue's history through the Node binding (`queue.history()`), against a real redis-server:
// after a Node worker ran jobs, the history kept in Redis counts them; a bad window or step
// rejects. Mirrors core/tests/history.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, useRedis } from './harness.mjs';

const redis = useRedis();

const drained = { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} };
const handler = async (job) => {
  if (job.text() === 'bad') throw new Error('bad job');
};
const sum = (points, field) => points.reduce((n, p) => n + p[field], 0);

test('history counts what a node worker ran', async () => {
  const { queue } = freshJobQueue(redis.url);
  // A worker's first report leaves the baseline snapshot (everything at 0).
  await queue.work(handler, drained).join();
  for (let i = 0; i < 5; i++) await queue.enqueue(Buffer.from('ok'));
  await queue.enqueue(Buffer.from('bad'), { maxAttempts: 1 });
  await queue.work(handler, drained).join();
  const points = await queue.history();
  assert.equal(points.length, 60);
  assert.deepEqual(
    points.slice(0, 3).map((p) => p.atMs - points[0].atMs),
    [0, 60_000, 120_000],
  );
  assert.equal(sum(points, 'enqueued'), 6);
  assert.equal(sum(points, 'completed'), 5);
  assert.equal(sum(points, 'deadLettered'), 1);
  assert.equal(sum(points, 'failed'), 1);
  assert.equal(sum(points, 'retried') + sum(points, 'cancelled'), 0);
  assert.ok(points.every((p) => p.latenessMs === null || typeof p.latenessMs === 'number'));
  // Steps of several minutes, aligned on the step.
  const tens = await queue.history({ windowMs: 7_200_000, stepMs: 600_000 });
  assert.equal(tens.length, 12);
  assert.ok(tens.every((p) => p.atMs % 600_000 === 0));
  assert.equal(sum(tens, 'completed'), 5);
});

test('a bad window or step rejects with INVALID_ARGUMENT', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const options of [
    { stepMs: 30_000 },
    { stepMs: 90_000 },
    { windowMs: 60_000, stepMs: 120_000 },
    { windowMs: 15 * 86_400_000 },
    { windowMs: -1 },
    { window: 60_000 },
  ]) {
    await assert.rejects(queue.history(options), { code: 'INVALID_ARGUMENT' }, JSON.stringify(options));
  }
});
