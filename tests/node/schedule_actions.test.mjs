// A schedule's actions through the Node binding (issue 43, "Settings from the UI"), against a
// real redis-server: runSchedule enqueues one job and leaves the next slot; pauseSchedule stops it
// firing, resumeSchedule starts it again; schedules() shows paused, the last job and its
// outcome; an unknown name rejects and writes nothing. Mirrors core/tests/schedule_actions.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, redisCommand, rejectsWith, sleep, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();

/** Every key of the prefix with its value (DUMP), to show that a refused call wrote nothing. */
async function dump(prefix) {
  const keys = (await keysWithPrefix(redis.url, prefix)).map(String).sort();
  const out = [];
  for (const k of keys) out.push([k, String(await redisCommand(redis.url, 'DUMP', k))]);
  return out;
}

test('runSchedule enqueues one job and leaves the next run unchanged; the listing shows it as the last job', async () => {
  const { queue } = freshJobQueue(redis.url);
  const next = await queue.upsertSchedule('hourly', Buffer.from('p'), { everyMs: 3_600_000 });
  const id = await queue.runSchedule('hourly');
  assert.match(id, /^hourly@run-\d+$/);
  assert.equal((await queue.get(id)).state, 'ready');
  const [s] = await queue.schedules();
  assert.equal(s.nextRunMs, next);
  assert.equal(s.lastJobId, id);
  assert.equal(s.lastJobState, 'ready');
  assert.equal(s.paused, false);
});

test('a paused schedule does not fire over two periods, and fires again after resumeSchedule', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.upsertSchedule('tick', Buffer.from('t'), { everyMs: 1000 });
  assert.equal(await queue.pauseSchedule('tick'), true);
  assert.equal(await queue.pauseSchedule('tick'), false);
  const [s] = await queue.schedules();
  assert.equal(s.paused, true);
  assert.notEqual(s.nextRunMs, null);
  const seen = [];
  const worker = queue.work((job) => void seen.push(job.id), { pollIntervalMs: 100 });
  try {
    await sleep(2500);
    assert.deepEqual(seen, [], 'a paused schedule fired');
    assert.equal(await queue.resumeSchedule('tick'), true);
    assert.equal(await queue.resumeSchedule('tick'), false);
    await waitFor(() => seen.length > 0, 'a run after resume', 10_000);
  } finally {
    await worker.shutdown();
  }
});

test('actions on an unknown schedule reject with INVALID_ARGUMENT and write nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.upsertSchedule('real', Buffer.from('p'), { everyMs: 3_600_000 });
  const before = await dump(prefix);
  await rejectsWith(() => queue.runSchedule('nosuch'), 'INVALID_ARGUMENT', Error, /no schedule named "nosuch"/);
  await rejectsWith(() => queue.pauseSchedule('nosuch'), 'INVALID_ARGUMENT', Error, /no schedule named "nosuch"/);
  await rejectsWith(() => queue.resumeSchedule('nosuch'), 'INVALID_ARGUMENT', Error, /no schedule named "nosuch"/);
  await rejectsWith(() => queue.runSchedule(''), 'INVALID_ARGUMENT');
  assert.equal(await queue.removeSchedule('nosuch'), false);
  assert.deepEqual(await dump(prefix), before);
});
