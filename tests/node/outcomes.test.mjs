// What a job handler throws besides a failure: Snooze (run again later, no attempt used),
// BackOff (hold the queue or the job's group), DontRetry (dead-letter at once). The core keeps
// the rules (core/tests/outcomes.rs); these check that each class reaches it from sync and async
// handlers and from tasks, that a snooze is not reported as an error, and that bad values throw.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const fast = { backoff: { type: 'fixed', delayMs: 50 } };
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

test('Snooze runs the job again without using an attempt and is not reported as an error', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 's', maxAttempts: 1 });
  const seen = [];
  const reported = [];
  const stats = await queue.run(
    (job) => {
      seen.push(job.attempt);
      if (seen.length < 3) throw new tideq.Snooze(20);
    },
    { ...drained, onError: (err) => reported.push(err) },
  );
  assert.deepEqual(seen, [1, 1, 1]);
  assert.deepEqual([stats.snoozed, stats.failed, stats.completed], [2, 0, 1]);
  const s = await queue.stats();
  assert.deepEqual([s.snoozed, s.retried, s.deadLettered], [2, 0, 0]);
  assert.deepEqual(reported, []);
});

test('an async handler and a task snooze too (a rejected Promise)', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueueTask('poll', { n: 1 });
  const seen = [];
  const stats = await queue.run(
    {
      poll: async (data) => {
        seen.push(data.n);
        if (seen.length === 1) throw new tideq.Snooze(0);
      },
    },
    drained,
  );
  assert.deepEqual(seen, [1, 1]);
  assert.deepEqual([stats.snoozed, stats.completed, stats.failed], [1, 1, 0]);
});

test('BackOff with group holds that group and runs the job again first in it', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from(''), { id: 'a1', group: 'a' });
  await queue.enqueue(Buffer.from(''), { id: 'a2', group: 'a' });
  for (let i = 0; i < 4; i++) await queue.enqueue(Buffer.from(''), { id: `b${i}`, group: 'b' });
  const runs = [];
  const stats = await queue.run(
    async (job) => {
      const first = job.id === 'a1' && !runs.some((r) => r[0] === 'a1');
      runs.push([job.id, job.startedAt]);
      if (first) throw new tideq.BackOff(500, { group: true });
    },
    { ...drained, concurrency: 1 },
  );
  assert.deepEqual([stats.snoozed, stats.completed], [1, 6]);
  const a = runs.filter((r) => r[0].startsWith('a'));
  assert.deepEqual(a.map((r) => r[0]), ['a1', 'a1', 'a2']);
  assert.ok(a[1][1] >= a[0][1] + 500, JSON.stringify(runs));
  assert.ok(Math.max(...runs.filter((r) => r[0].startsWith('b')).map((r) => r[1])) < a[1][1]);
});

test('DontRetry dead-letters at once and is reported like a failure', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'd', maxAttempts: 5 });
  const reported = [];
  const stats = await queue.run(
    () => {
      throw new tideq.DontRetry('card declined');
    },
    { ...drained, onError: (err) => reported.push(err) },
  );
  assert.equal(stats.failed, 1);
  const info = await queue.get('d');
  assert.deepEqual([info.state, info.attempts, info.lastError], ['dead', 1, 'DontRetry: card declined']);
  assert.equal(reported.length, 1);
  assert.ok(reported[0] instanceof tideq.DontRetry);
});

test('an error that merely looks like one (a plain Error named Snooze) is a failure', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'p', maxAttempts: 1 });
  const stats = await queue.run(
    () => {
      const e = new Error('snoozed for 5 ms');
      e.name = 'Snooze';
      throw e;
    },
    { ...drained, onError: () => {} },
  );
  assert.deepEqual([stats.failed, stats.snoozed], [1, 0]);
});

test('a bad delay throws INVALID_ARGUMENT when the class is made', () => {
  for (const bad of [-1, NaN, Infinity]) {
    assert.throws(() => new tideq.Snooze(bad), { code: 'INVALID_ARGUMENT', message: /delayMs must be a non-negative number of ms/ });
    assert.throws(() => new tideq.BackOff(bad), { code: 'INVALID_ARGUMENT' });
  }
  assert.throws(() => new tideq.Snooze('5'), { name: 'TypeError', code: 'INVALID_ARGUMENT', message: 'delayMs must be a number of ms, not string' });
  assert.equal(new tideq.BackOff(2.5, { group: true }).delayMs, 3);
  assert.ok(new tideq.Snooze(1) instanceof Error);
});
