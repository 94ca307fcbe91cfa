// Graphs through the Node binding (enqueueGraph): jobs that run after several others. The deep
// promises are core/tests/graphs.rs's; these check the binding: a diamond runs in order with its
// results passed (a step gets them as its data), per-edge onFailure reaches the core, and a bad
// graph is refused with nothing written.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, useRedis } from './harness.mjs';

const redis = useRedis();

test('a diamond runs its last job once after both, with their results', async () => {
  const { queue } = freshJobQueue(redis.url, { keepCompleted: 100 });
  const made = await queue.enqueueGraph([
    { id: 'a', job: { name: 'double', data: 1 } },
    { id: 'b', job: { name: 'add' }, after: ['a'] },
    { id: 'c', job: { name: 'add' }, after: [{ id: 'a', onFailure: 'continue' }] },
    { id: 'd', job: { name: 'add' }, after: ['b', 'c'] },
  ]);
  assert.deepEqual(made, { id: 'd', created: true });
  const b = await queue.get('b');
  assert.equal(b.state, 'waiting');
  assert.equal(b.childrenPending, 1);
  assert.deepEqual(b.parents.map((p) => p.id), ['d']);
  const a = await queue.get('a');
  assert.deepEqual(a.parents.map((p) => p.id).sort(), ['b', 'c'], 'a reports to both');
  assert.equal(a.parent.id, a.parents[0].id);
  assert.deepEqual((await queue.enqueue(Buffer.from('x')).then(({ id }) => queue.get(id))).parents, []);
  const order = [];
  const worker = queue.work({
    double: (n, job) => { order.push(job.id); return 2 * n; },
    add: (results, job) => { order.push(job.id); return results.reduce((s, n) => s + n, 0); },
  }, { pollIntervalMs: 50 });
  try {
    // a = 2; b and c each add up [a]; d adds up [b, c].
    assert.equal(await queue.wait('d', { timeoutMs: 20_000 }), 4);
    assert.equal(await queue.wait('b', { timeoutMs: 5_000 }), 2);
  } finally {
    await worker.shutdown();
  }
  assert.equal(order.length, 4);
  assert.equal(order[0], 'a');
  assert.equal(order[3], 'd');
});

test('a graph with a cycle or a missing job is refused with nothing written', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const raw = (id, after) => ({ id, job: { payload: Buffer.from(id) }, after });
  await rejectsWith(
    () => queue.enqueueGraph([raw('x', ['y']), raw('y', ['x'])]),
    'INVALID_ARGUMENT', Error, /cycle.*x → y → x/,
  );
  await rejectsWith(() => queue.enqueueGraph([raw('x', ['nope'])]), 'INVALID_ARGUMENT', Error, /not in the graph/);
  await rejectsWith(() => queue.enqueueGraph([raw('x'), raw('x')]), 'INVALID_ARGUMENT', Error, /declared twice/);
  await rejectsWith(
    () => queue.enqueueGraph([raw('x'), raw('y', [{ id: 'x', onFailure: 'sometimes' }])]),
    'INVALID_ARGUMENT', Error, /onFailure/,
  );
  await assert.rejects(() => queue.enqueueGraph([{ id: 'x' }]), /job is required/);
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});
