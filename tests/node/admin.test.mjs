// Listing jobs by state (queue.jobs(state, { offset, limit })) through the Node binding, against a
// real redis-server: each state's order, priorities and groups, paging, bad arguments. Mirrors
// core/tests/admin.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, useRedis } from './harness.mjs';

const redis = useRedis();
const ids = (jobs) => jobs.map((j) => j.id);

/** Delayed soon and late; done completed, dead dead, busy active; ready: plain, a prioritized
 * job, a grouped one. */
async function oneOfEachState(queue) {
  await queue.enqueue(Buffer.from('x'), { id: 'late', delayMs: 30_000 });
  await queue.enqueue(Buffer.from('x'), { id: 'soon', delayMs: 10_000 });
  await queue.enqueueMany([
    { payload: Buffer.from('x'), id: 'done' },
    { payload: Buffer.from('x'), id: 'dead', maxAttempts: 1 },
    { payload: Buffer.from('x'), id: 'busy' },
  ]);
  const [done, dead] = await queue.leaseJobs(3, { leaseMs: 60_000 });
  await queue.complete(done);
  assert.equal(await queue.fail(dead, 'boom'), true);
  await queue.enqueue(Buffer.from('x'), { id: 'g1', group: 'tenant' });
  await queue.enqueue(Buffer.from('x'), { id: 'p1', priority: 2 });
  await queue.enqueue(Buffer.from('x'), { id: 'plain' });
}

test('each state lists its jobs in its order, with priority and group', async () => {
  const { queue } = freshJobQueue(redis.url);
  await oneOfEachState(queue);
  assert.deepEqual(ids(await queue.jobs('delayed')), ['soon', 'late']);
  const ready = await queue.jobs('ready');
  assert.deepEqual(ready.map((j) => [j.id, j.state, j.priority, j.group]), [
    ['plain', 'ready', null, null],
    ['p1', 'ready', 2, null],
    ['g1', 'ready', null, 'tenant'],
  ]);
  const [busy, ...more] = await queue.jobs('active');
  assert.deepEqual([busy.id, busy.state, busy.attempts, more], ['busy', 'active', 1, []]);
  assert.deepEqual(await queue.jobs('dead'), await queue.deadLetters());
  assert.deepEqual(ids(await queue.jobs('dead')), ['dead']);
  assert.deepEqual(ids(await queue.jobs('completed')), ['done']);
});

test('pages cover every job once, without gaps or repeats', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueMany(Array.from({ length: 17 }, (_, i) => ({
    payload: Buffer.from('x'),
    id: `j${i}`,
    priority: 1 + (i % 3),
    ...(i % 2 ? {} : { group: `g${i % 4}` }),
  })));
  const whole = ids(await queue.jobs('ready', { limit: 1000 }));
  assert.deepEqual([...whole].sort(), Array.from({ length: 17 }, (_, i) => `j${i}`).sort());
  const paged = [];
  for (;;) {
    const page = await queue.jobs('ready', { offset: paged.length, limit: 4 });
    if (page.length === 0) break;
    paged.push(...ids(page));
  }
  assert.deepEqual(paged, whole);
  assert.deepEqual(ids(await queue.jobs('ready', { offset: 2, limit: 3 })), whole.slice(2, 5));
  assert.deepEqual(await queue.jobs('ready', { limit: 0 }), []);
});

test('an unknown state or a bad page is refused and nothing is written', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await rejectsWith(() => queue.jobs('finished'), 'INVALID_ARGUMENT', Error, /completed/);
  await rejectsWith(() => queue.jobs('ready', { limit: 1001 }), 'INVALID_ARGUMENT', Error, /1000/);
  await rejectsWith(() => queue.jobs('ready', { offset: -1 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.jobs('ready', { page: 2 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.jobs(1), 'INVALID_ARGUMENT', TypeError);
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'bad input wrote to Redis');
});
