// Per-task metrics through the Node binding (`queue.taskMetrics()`), against a real redis-server:
// after a Node worker ran tasks, each task's counts and run times; a bad window rejects. Mirrors
// core/tests/task_metrics.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, useRedis } from './harness.mjs';

const redis = useRedis();

const drained = { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} };

test('taskMetrics counts what a node worker ran per task', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (let i = 0; i < 3; i++) await queue.enqueueTask('mail', { to: i });
  await queue.enqueueTask('bill', 10, { maxAttempts: 1 });
  // The worker's last report (when it stops) carries its counts.
  await queue
    .work(
      {
        mail: async () => {},
        bill: async () => {
          throw new Error('declined');
        },
      },
      drained,
    )
    .join();
  const all = await queue.taskMetrics();
  const by = Object.fromEntries(all.map((t) => [t.task, t]));
  assert.deepEqual(Object.keys(by).sort(), ['bill', 'mail']);
  const m = by.mail;
  assert.deepEqual([m.completed, m.failed, m.deadLettered, m.runs], [3, 0, 0, 3]);
  assert.ok(m.runMsSum >= 0);
  assert.ok(Math.abs(m.runMsAvg - m.runMsSum / 3) < 1e-9);
  const b = by.bill;
  assert.deepEqual([b.completed, b.failed, b.deadLettered, b.runs], [0, 1, 1, 1]);
  for (const windowMs of [3_600_000, 86_400_000, 14 * 86_400_000]) {
    const w = await queue.taskMetrics({ windowMs });
    assert.deepEqual(w.map((t) => t.task), ['bill', 'mail'], String(windowMs));
  }
});

test('a bad window rejects with INVALID_ARGUMENT', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const options of [{ windowMs: 30_000 }, { windowMs: 15 * 86_400_000 }, { windowMs: -1 }, { window: 60_000 }]) {
    await assert.rejects(queue.taskMetrics(options), { code: 'INVALID_ARGUMENT' }, JSON.stringify(options));
  }
});
