// Expiry before start (expiresAfterMs, expiresAt): a job no worker started by its deadline is
// not run but dead-lettered as expired. The core keeps the rule (core/tests/expiry.rs); these
// check the options reach it from enqueue, enqueueMany and enqueueTask, and that bad values are
// refused with nothing written.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { freshJobQueue, useRedis } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

test('a job not started by its deadline is not run, and is counted and reported', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setEvents(100);
  await queue.enqueue(Buffer.from('x'), { id: 'late', expiresAfterMs: 50 });
  await queue.enqueueMany([{ payload: Buffer.from('y'), id: 'late2', expiresAt: new Date(Date.now() - 1000) }]);
  await queue.enqueueTask('ping', {}, { id: 'late3', expiresAt: Date.now() - 1000 });
  await queue.enqueue(Buffer.from('z'), { id: 'fine', expiresAt: Date.now() + 3_600_000 });
  await delay(200);
  const ran = [];
  const stats = await queue.run((job) => void ran.push(job.id), drained);
  assert.deepEqual(ran, ['fine']);
  assert.equal(stats.completed, 1);
  const s = await queue.stats();
  assert.deepEqual([s.expired, s.deadLettered, s.completed], [3, 0, 1]);
  const info = await queue.get('late');
  assert.equal(info.state, 'dead');
  assert.match(info.lastError, /^expired: not started by its deadline/);
  await assert.rejects(queue.wait('late2', { timeoutMs: 5000 }), { code: 'JOB_FAILED', message: /expired/ });
  const kinds = [];
  const reader = queue.events({ fromStart: true });
  for (;;) {
    const e = await reader.next({ timeoutMs: 300 });
    if (!e) break;
    if (e.jobId === 'late') kinds.push(e.kind);
  }
  assert.deepEqual(kinds, ['enqueued', 'expired']);
});

test('bad expiry options are refused and nothing is written', async () => {
  const { queue } = freshJobQueue(redis.url);
  await assert.rejects(queue.enqueue(Buffer.from('x'), { expiresAfterMs: 10, expiresAt: Date.now() }), {
    code: 'INVALID_ARGUMENT',
    message: 'give expires_after or expires_at, not both',
  });
  await assert.rejects(queue.enqueue(Buffer.from('x'), { expiresAfterMs: 0 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(queue.enqueue(Buffer.from('x'), { expiresAfterMs: 'soon' }), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.equal((await queue.stats()).enqueued, 0);
});
