// Bulk actions through the Node binding, against a real redis-server: retryJobs/deleteJobs/
// cancelJobs (per id outcomes, over 1000 ids refused), bulkFound page by page and retryFound,
// promoteAll, clean, obliterate (refused with a live worker, done with force). Mirrors
// core/tests/bulk.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, rejectsWith, useRedis } from './harness.mjs';

const redis = useRedis();
const hour = 3_600_000;

async function kill(queue, ...ids) {
  for (const id of ids) {
    await queue.enqueue(Buffer.from('order'), { id, maxAttempts: 1 });
    const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
    assert.equal(await queue.fail(job, 'boom'), true);
  }
}

test('retryJobs requeues the dead ids and reports the others', async () => {
  const { queue } = freshJobQueue(redis.url);
  await kill(queue, 'd1', 'd2');
  await queue.enqueue(Buffer.from('x'), { id: 'later', delayMs: hour });
  const got = await queue.retryJobs(['d1', 'later', 'nope', 'd2']);
  assert.deepEqual(got, [
    { id: 'd1', outcome: 'done', state: null },
    { id: 'later', outcome: 'wrong_state', state: 'delayed' },
    { id: 'nope', outcome: 'unknown', state: null },
    { id: 'd2', outcome: 'done', state: null },
  ]);
  assert.equal((await queue.get('d1')).state, 'ready');
});

test('more than 1000 ids reject with INVALID_ARGUMENT and change nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  await kill(queue, 'd1');
  const ids = [...Array(1000).keys()].map((i) => `j${i}`).concat(['d1']);
  for (const call of ['retryJobs', 'deleteJobs', 'cancelJobs']) {
    await rejectsWith(() => queue[call](ids), 'INVALID_ARGUMENT');
  }
  assert.equal((await queue.get('d1')).state, 'dead');
});

test('bulkFound walks a search page by page; retryFound, deleteJobs and cancelJobs act', async () => {
  const { queue } = freshJobQueue(redis.url);
  await kill(queue, 'o1', 'o2', 'o3');
  const page = await queue.bulkFound('retry', { contains: 'order' });
  assert.deepEqual(page, { done: 3, skipped: 0, cursor: null });
  await kill(queue, 'o9');
  assert.deepEqual(await queue.retryFound({ contains: 'order' }), { done: 1, skipped: 0 });
  await rejectsWith(() => queue.bulkFound('retry', { state: 'ready' }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.bulkFound('explode'), 'INVALID_ARGUMENT');
  assert.equal((await queue.cancelJobs(['o1', 'zz'])).map((i) => i.outcome).join(), 'done,unknown');
});

test('promoteAll, clean, and a bad state or age', async () => {
  const { queue } = freshJobQueue(redis.url);
  await kill(queue, 'd1');
  for (const id of ['l1', 'l2']) await queue.enqueue(Buffer.from('x'), { id, delayMs: hour });
  assert.equal(await queue.promoteAll(), 2);
  assert.equal(await queue.clean('dead', hour), 0);
  assert.equal(await queue.clean('dead', 0), 1);
  await rejectsWith(() => queue.clean('ready', 0), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.clean('dead', -1), 'INVALID_ARGUMENT');
});

test('obliterate is refused while a worker is live, done with force, and leaves nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'l1', delayMs: hour });
  const worker = queue.work(() => {}, { pollIntervalMs: 50 });
  try {
    for (let i = 0; i < 500 && (await queue.workers()).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await rejectsWith(() => queue.obliterate(), 'INVALID_ARGUMENT');
    assert.equal((await queue.get('l1')).state, 'delayed');
    assert.ok((await queue.obliterate({ force: true })) > 0);
  } finally {
    worker.stop();
    await worker.join();
  }
  await queue.obliterate();
  assert.equal(await queue.get('l1'), null);
  assert.equal((await queue.stats()).enqueued, 0);
});
