// Dedup and debounce keys on enqueue through the Node binding, against a real redis-server: a
// dedup key names one job (for its TTL, or until the job finishes); a debounced enqueue replaces
// the waiting job's payload and due time; bad keys and combinations write nothing. Mirrors
// core/tests/dedup.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, sleep, useRedis } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

/** Runs the queue's jobs until it is drained; resolves with their payloads as text, in order. */
async function drain(queue) {
  const seen = [];
  await queue.work((job) => void seen.push(job.payload.toString()), drained).join();
  return seen;
}

test('a second enqueue with a dedup key within its TTL resolves with the first id and creates nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  const dedup = { key: 'k', ttlMs: 60_000 };
  const first = await queue.enqueue(Buffer.from('a'), { dedup });
  assert.equal(first.created, true);
  assert.deepEqual(await queue.enqueue(Buffer.from('b'), { dedup }), { id: first.id, created: false });
  assert.equal((await queue.get(first.id)).payload.toString(), 'a', 'the second enqueue changed the job');
  const s = await queue.stats();
  assert.deepEqual([s.ready, s.enqueued], [1, 1]);
  // Within the TTL the key holds even after its job completed.
  assert.deepEqual(await drain(queue), ['a']);
  assert.deepEqual(await queue.enqueue(Buffer.from('c'), { dedup }), { id: first.id, created: false });
  assert.equal((await queue.stats()).enqueued, 1);
});

test('dedup keys work the same on task enqueues and within one enqueueMany', async () => {
  const { queue } = freshJobQueue(redis.url);
  const task = await queue.enqueueTask('report', { day: 1 }, { dedup: 'daily' });
  assert.equal(task.created, true);
  assert.deepEqual(await queue.enqueueTask('report', { day: 2 }, { dedup: 'daily' }), { id: task.id, created: false });
  const many = await queue.enqueueMany([
    { payload: Buffer.from('x1'), dedup: 'x' },
    { name: 'report', data: { day: 3 }, dedup: { key: 'y', ttlMs: 60_000 } },
    { payload: Buffer.from('x2'), dedup: 'x' },
    { name: 'report', data: { day: 4 }, dedup: 'daily' },
  ]);
  assert.deepEqual(many.map((r) => r.created), [true, true, false, false]);
  assert.equal(many[2].id, many[0].id);
  assert.equal(many[3].id, task.id);
  assert.equal((await queue.stats()).ready, 3);
});

test('a dedup key without a TTL holds while its job waits and is freed when the job completes', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const first = await queue.enqueue(Buffer.from('a'), { dedup: 'k' });
  assert.equal(first.created, true);
  assert.deepEqual(await queue.enqueue(Buffer.from('b'), { dedup: 'k' }), { id: first.id, created: false });
  assert.deepEqual(await drain(queue), ['a']);
  // The key went with the job: nothing of it is left in Redis.
  assert.deepEqual((await keysWithPrefix(redis.url, prefix)).filter((k) => k.includes(':dd:')), []);
  const after = await queue.enqueue(Buffer.from('c'), { dedup: 'k' });
  assert.equal(after.created, true);
  assert.notEqual(after.id, first.id);
});

test("a debounced enqueue replaces the waiting job's payload and pushes its due time back", async () => {
  const { queue } = freshJobQueue(redis.url);
  const debounce = { key: 'save', delayMs: 400 };
  const first = await queue.enqueue(Buffer.from('v1'), { debounce });
  assert.equal(first.created, true);
  const before = await queue.get(first.id);
  assert.equal(before.state, 'delayed');
  await sleep(100);
  assert.deepEqual(await queue.enqueue(Buffer.from('v2'), { debounce }), { id: first.id, created: false });
  const info = await queue.get(first.id);
  assert.equal(info.state, 'delayed');
  assert.equal(info.payload.toString(), 'v2');
  assert.ok(info.stateSinceOrUntil >= before.stateSinceOrUntil + 90, `due ${before.stateSinceOrUntil} -> ${info.stateSinceOrUntil}`);
  const s = await queue.stats();
  assert.deepEqual([s.delayed, s.enqueued], [1, 1]);
  assert.deepEqual(await drain(queue), ['v2']);
});

test('a debounced enqueue never replaces a job waiting for its retry', async () => {
  const { queue } = freshJobQueue(redis.url, { backoff: { type: 'fixed', delayMs: 30_000 }, maxAttempts: 3 });
  const first = await queue.enqueue(Buffer.from('v1'), { debounce: { key: 'k', delayMs: 1 } });
  await sleep(20);
  const [job] = await queue.leaseJobs(1);
  assert.equal(await queue.fail(job, 'first attempt failed'), false);
  const second = await queue.enqueue(Buffer.from('v2'), { debounce: { key: 'k', delayMs: 300 } });
  assert.ok(second.created && second.id !== first.id, 'the retrying job was taken over');
  const info = await queue.get(first.id);
  assert.deepEqual([info.payload.toString(), info.attempts], ['v1', 1]);
});

test('a requeued dead job takes its dedup key back', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1 });
  const dead = await queue.enqueue(Buffer.from('a'), { dedup: 'k' });
  const [job] = await queue.leaseJobs(1);
  assert.equal(await queue.fail(job, 'no'), true);
  await queue.requeue(dead.id);
  const again = await queue.enqueue(Buffer.from('b'), { dedup: 'k' });
  assert.deepEqual([again.created, again.id], [false, dead.id], 'a second pending job for key k');
});

test('bad dedup and debounce options reject with INVALID_ARGUMENT and write nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const debounce = { key: 'k', delayMs: 10 };
  const cases = [
    [{ dedup: '' }, /dedup key/],
    [{ dedup: { key: '' } }, /dedup key/],
    [{ dedup: 'a\nb' }, /dedup key/],
    [{ dedup: { key: 'k', ttlMs: 0 } }, /ttl must be at least 1 ms/],
    [{ dedup: { key: 'k', ttlMs: -1 } }, /ttlMs/],
    [{ dedup: {} }, /dedup\.key is required/],
    [{ dedup: { key: 'k', ttl: 5 } }, /unknown option "ttl"/],
    [{ debounce: { key: '', delayMs: 10 } }, /debounce key/],
    [{ debounce: { key: 'k', delayMs: 0 } }, /debounce delay must be at least 1 ms/],
    [{ debounce: { key: 'k' } }, /debounce\.delayMs is required/],
    [{ debounce, delayMs: 1000 }, /no delay or run_at/],
    [{ debounce, runAt: Date.now() + 1000 }, /no delay or run_at/],
    [{ debounce, id: 'mine' }, /no id/],
    [{ debounce, dedup: 'k' }, /dedup or debounce, not both/],
  ];
  for (const [opts, message] of cases) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), opts), 'INVALID_ARGUMENT', Error, message);
    await rejectsWith(() => queue.enqueueTask('task', { n: 1 }, opts), 'INVALID_ARGUMENT', Error, message);
  }
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { dedup: 5 }), 'INVALID_ARGUMENT', TypeError, /dedup must be a string \(the key\) or an object/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { debounce: 'k' }), 'INVALID_ARGUMENT', TypeError, /debounce must be an object/);
  // Debounce is enqueue's alone, even for one job; a bad dedup key anywhere refuses the batch.
  await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('x'), debounce }]), 'INVALID_ARGUMENT', Error, /unknown option "debounce"/);
  await rejectsWith(
    () => queue.enqueueMany([{ payload: Buffer.from('x'), debounce }, { payload: Buffer.from('y'), debounce: { key: 'j', delayMs: 10 } }]),
    'INVALID_ARGUMENT',
  );
  await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('ok'), dedup: 'fine' }, { payload: Buffer.from('x'), dedup: '' }]), 'INVALID_ARGUMENT');
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});
