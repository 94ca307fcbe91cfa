// Batch workers and manual leasing through the Node binding: workBatches (all done, partial
// failure by job id as an object or a Map, a throw failing the whole batch) and leaseJobs with
// complete/fail/release/extend. Mirrors core/tests/batches.rs and core/tests/lease_*.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

test('batch partial failure: the jobs a batch handler names fail, the rest of the batch completes', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1 });
  await queue.enqueueMany(Array.from({ length: 9 }, (_, i) => ({ payload: Buffer.from(`b${i}`), id: `b${i}` })));
  const sizes = [];
  let asMap = false;
  const stats = await queue
    .workBatches(
      async (jobs) => {
        assert.ok(jobs.every((j) => j instanceof tideq.Job));
        sizes.push(jobs.length);
        const failed = jobs.filter((j) => ['b1', 'b4', 'b7'].includes(j.id));
        // Every other batch answers with a Map instead of an object.
        asMap = !asMap;
        if (asMap) return new Map(failed.map((j) => [j.id, new TypeError(`bad ${j.id}`)]));
        return Object.fromEntries(failed.map((j) => [j.id, `bad ${j.id}`]));
      },
      { size: 3, waitMs: 200, concurrency: 3, ...drained },
    )
    .join();
  assert.ok(sizes.every((n) => n >= 1 && n <= 3), JSON.stringify(sizes));
  assert.equal(sizes.reduce((a, b) => a + b, 0), 9);
  assert.deepEqual([stats.completed, stats.failed], [6, 3]);
  const dead = await queue.deadLetters();
  assert.deepEqual(dead.map((j) => j.id).sort(), ['b1', 'b4', 'b7']);
  for (const j of dead) assert.match(j.lastError, new RegExp(`^(TypeError: )?bad ${j.id}$`));
  assert.equal((await queue.get('b0')).state, 'completed');
});

test('a batch handler that throws fails every job of its batch; resolving to undefined completes them all', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1 });
  await queue.enqueueMany([Buffer.from('bad'), Buffer.from('bad')]);
  const reported = [];
  const stats = await queue
    .workBatches(
      (jobs) => {
        throw new Error(`whole batch of ${jobs.length}`);
      },
      { size: 2, waitMs: 500, concurrency: 2, ...drained, onError: (err, jobs) => reported.push([err.message, jobs.length]) },
    )
    .join();
  assert.deepEqual([stats.completed, stats.failed], [0, 2]);
  assert.deepEqual(reported, [['whole batch of 2', 2]]);
  const dead = await queue.deadLetters();
  assert.deepEqual(dead.map((j) => j.lastError), ['Error: whole batch of 2', 'Error: whole batch of 2']);

  await queue.enqueueMany([Buffer.from('ok'), Buffer.from('ok'), Buffer.from('ok')]);
  const done = await queue.workBatches(async () => {}, { size: 3, waitMs: 300, concurrency: 3, ...drained }).join();
  assert.deepEqual([done.completed, done.failed], [3, 0]);
  // A reply that is neither undefined nor an object of failures fails the batch, saying why.
  await queue.enqueue(Buffer.from('odd'), { id: 'odd' });
  await queue.workBatches(() => 42, { size: 1, ...drained, onError: () => {} }).join();
  assert.match((await queue.get('odd')).lastError, /resolved with number: expected undefined/);
  await rejectsWith(() => queue.workBatches(() => {}, { size: 11 }), 'INVALID_ARGUMENT', Error, /batch size \(11\) must not exceed the worker's concurrency \(10\)/);
  await rejectsWith(() => queue.workBatches(() => {}, { size: 0 }), 'INVALID_ARGUMENT', Error, /batch size/);
  await rejectsWith(() => queue.workBatches(() => {}, { batchSize: 4 }), 'INVALID_ARGUMENT', Error, /unknown option "batchSize"/);
});

test('manual leasing: leaseJobs, then complete, fail, release and extend, each fenced by the lease', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, { backoff: { type: 'fixed', delayMs: 60_000 } });
  await rejectsWith(() => queue.leaseJobs(0), 'INVALID_ARGUMENT', Error, /max/);
  await rejectsWith(() => queue.leaseJobs(1, { leaseMs: 0 }), 'INVALID_ARGUMENT', Error, /lease/);
  await rejectsWith(() => queue.complete({ id: 'x' }), 'INVALID_ARGUMENT', TypeError, /job must be a Job/);
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'bad input wrote to Redis');
  assert.deepEqual(await queue.leaseJobs(5), [], 'nothing ready');

  await queue.enqueue(Buffer.from('c'), { id: 'c' });
  await queue.enqueue(Buffer.from('f'), { id: 'f', maxAttempts: 2 });
  await queue.enqueue(Buffer.from('d'), { id: 'd', maxAttempts: 1 });
  await queue.enqueueTask('task', { n: 1 }, { id: 'r' });
  const jobs = Object.fromEntries((await queue.leaseJobs(10, { leaseMs: 5_000 })).map((j) => [j.id, j]));
  assert.deepEqual(Object.keys(jobs).sort(), ['c', 'd', 'f', 'r']);
  assert.ok(jobs.c instanceof tideq.Job);
  assert.equal(jobs.c.attempt, 1);
  assert.deepEqual(jobs.r.data, { n: 1 });
  assert.equal(jobs.c.signal.aborted, false);
  assert.equal((await queue.get('c')).state, 'active');

  await queue.complete(jobs.c);
  assert.equal((await queue.get('c')).state, 'completed');
  assert.equal(await queue.fail(jobs.f, new Error('try again')), false, 'retried');
  const f = await queue.get('f');
  assert.deepEqual([f.state, f.lastError], ['delayed', 'Error: try again']);
  assert.equal(await queue.fail(jobs.d, 'out of attempts'), true, 'dead-lettered');
  assert.deepEqual([(await queue.get('d')).state, (await queue.get('d')).lastError], ['dead', 'out of attempts']);

  const before = (await queue.get('r')).stateSinceOrUntil;
  await queue.extend(jobs.r, 60_000);
  assert.ok((await queue.get('r')).stateSinceOrUntil > before + 30_000, 'the lease deadline moved');
  await queue.release(jobs.r);
  const r = await queue.get('r');
  assert.deepEqual([r.state, r.attempts], ['ready', 0], 'released: back to ready, the attempt not counted');

  // Settling a lease twice: it is no longer held.
  await rejectsWith(() => queue.complete(jobs.r), 'LEASE_LOST');
  await rejectsWith(() => queue.fail(jobs.f, 'again'), 'LEASE_LOST');
  await rejectsWith(() => queue.extend(jobs.c, 1_000), 'LEASE_LOST');
  const [again] = await queue.leaseJobs(1, { leaseMs: 5_000 });
  assert.equal(again.id, 'r');
  await queue.complete(again);
});

test('runBatches runs a batch worker until it stops and resolves with its stats', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueMany(Array.from({ length: 5 }, (_, i) => Buffer.from(`r${i}`)));
  let seen = 0;
  const stats = await queue.runBatches((jobs) => { seen += jobs.length; }, { size: 5, ...drained });
  assert.equal(seen, 5);
  assert.equal(stats.completed, 5);
});
