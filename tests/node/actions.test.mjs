// The operator's per-job actions and search through the Node binding, against a real
// redis-server: promote (run a delayed job now), delete (a finished job), findJobs (by task or
// group, page by page with a cursor) and the JOB_WRONG_STATE they reject with. Mirrors
// core/tests/actions.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, rejectsWith, useRedis } from './harness.mjs';

const redis = useRedis();
const hour = 3_600_000;

/** One job of each state: delayed, ready, active, dead, done (completed). */
async function oneOfEach(queue) {
  await queue.enqueueMany([
    { payload: Buffer.from('x'), id: 'done' },
    { payload: Buffer.from('x'), id: 'dead', maxAttempts: 1 },
    { payload: Buffer.from('x'), id: 'active' },
  ]);
  const [done, dead] = await queue.leaseJobs(3, { leaseMs: 60_000 });
  await queue.complete(done);
  assert.equal(await queue.fail(dead, 'boom'), true);
  await queue.enqueue(Buffer.from('x'), { id: 'ready' });
  await queue.enqueue(Buffer.from('x'), { id: 'delayed', delayMs: hour });
}

test('promote makes a delayed job ready now, keeping its group', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'later', delayMs: hour, group: 'acme' });
  await queue.promote('later');
  const info = await queue.get('later');
  assert.deepEqual([info.state, info.group], ['ready', 'acme']);
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  assert.equal(job.id, 'later');
});

test('promote of a job not delayed rejects with JOB_WRONG_STATE, an unknown id with JOB_NOT_FOUND', async () => {
  const { queue } = freshJobQueue(redis.url);
  await oneOfEach(queue);
  for (const [id, state] of [['ready', 'ready'], ['active', 'active'], ['dead', 'dead'], ['done', 'completed']]) {
    await rejectsWith(() => queue.promote(id), 'JOB_WRONG_STATE', Error, new RegExp(`is ${state}; only a delayed job`));
  }
  assert.equal((await queue.get('ready')).state, 'ready');
  await rejectsWith(() => queue.promote('nope'), 'JOB_NOT_FOUND', Error, /nope/);
});

test('delete removes a dead or completed job, whose id can then be enqueued again', async () => {
  const { queue } = freshJobQueue(redis.url);
  await oneOfEach(queue);
  await queue.delete('dead');
  await queue.delete('done');
  assert.equal(await queue.get('dead'), null);
  assert.equal(await queue.get('done'), null);
  assert.deepEqual(await queue.deadLetters(), []);
  assert.deepEqual(await queue.jobs('completed'), []);
  assert.deepEqual(await queue.enqueue(Buffer.from('y'), { id: 'done' }), { id: 'done', created: true });
});

test('delete of a pending or running job rejects with JOB_WRONG_STATE, an unknown id with JOB_NOT_FOUND', async () => {
  const { queue } = freshJobQueue(redis.url);
  await oneOfEach(queue);
  for (const id of ['ready', 'delayed', 'active']) {
    await rejectsWith(() => queue.delete(id), 'JOB_WRONG_STATE', Error, /cancel it instead/);
    assert.equal((await queue.get(id)).state, id);
  }
  await rejectsWith(() => queue.delete('nope'), 'JOB_NOT_FOUND', Error, /nope/);
});

test('findJobs walks by cursor to the end and finds each job of the task or group once', async () => {
  const { queue } = freshJobQueue(redis.url);
  const items = [];
  for (let i = 0; i < 3000; i++) {
    items.push({
      name: i % 500 === 7 ? 'needle' : 'hay',
      data: {},
      id: `j${i}`,
      group: i % 700 === 3 ? 'gx' : undefined,
      delayMs: i % 2 ? hour : undefined,
    });
  }
  await queue.enqueueMany(items);
  const walk = async (filter, limit) => {
    const found = [];
    let cursor = null;
    do {
      const page = await queue.findJobs({ ...filter, cursor, limit });
      assert.ok(page.scanned <= 2000 && page.jobs.length <= limit);
      found.push(...page.jobs.map((j) => j.id));
      cursor = page.cursor;
    } while (cursor !== null);
    assert.equal(new Set(found).size, found.length, 'a job was found twice');
    return found.sort();
  };
  const needles = items.filter((j) => j.name === 'needle').map((j) => j.id).sort();
  const gx = items.filter((j) => j.group === 'gx').map((j) => j.id).sort();
  assert.deepEqual(await walk({ task: 'needle' }, 2), needles);
  assert.deepEqual(await walk({ group: 'gx' }, 50), gx);
  // By a substring of the data (an address, an order number).
  await queue.enqueueTask('mail', { to: 'ada@example.com' }, { id: 'to-ada' });
  assert.deepEqual(await walk({ contains: 'ada@example' }, 10), ['to-ada']);
  await rejectsWith(() => queue.findJobs({ contains: '' }), 'INVALID_ARGUMENT');
  const delayedNeedles = await walk({ task: 'needle', state: 'delayed' }, 10);
  assert.deepEqual(delayedNeedles, needles.filter((id) => Number(id.slice(1)) % 2));
  const first = await queue.findJobs();
  assert.equal(first.jobs.length, 50);
  assert.equal(typeof first.cursor, 'string');
});

test('findJobs rejects a bad filter, cursor or limit with INVALID_ARGUMENT', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'a' });
  for (const options of [
    { limit: 0 },
    { limit: 1001 },
    { task: '' },
    { group: '' },
    { state: 'sleeping' },
    { cursor: 'garbage' },
    { state: 'delayed', cursor: 'dead:0:' },
    { colour: 'red' },
  ]) {
    await rejectsWith(() => queue.findJobs(options), 'INVALID_ARGUMENT');
  }
});
