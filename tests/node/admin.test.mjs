// Listing jobs by state (queue.jobs(state, { offset, limit }) and the cursor walk queue.jobsPage) through the Node binding, against a
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

/** Every job of `state`, page by page with the cursor each page gives. */
async function walk(queue, state, limit, pauseMs = 0) {
  const out = [];
  let cursor = null;
  for (;;) {
    const page = await queue.jobsPage(state, { cursor, limit });
    assert.ok(page.jobs.length <= limit);
    out.push(...page.jobs.map((j) => j.id));
    if (page.cursor === null) return out;
    cursor = page.cursor;
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
}

test('a walk by cursor while a worker takes jobs lists none twice and skips none that stayed ready', async () => {
  const { queue } = freshJobQueue(redis.url);
  const items = Array.from({ length: 2500 }, (_, i) => (i < 2000 ? { payload: Buffer.from('x') } : { payload: Buffer.from('x'), group: `g${i % 13}` }));
  await queue.enqueueMany(items);
  const start = new Set(await walk(queue, 'ready', 1000));
  assert.equal(start.size, 2500);
  const worker = queue.work(async () => { await new Promise((r) => setTimeout(r, 2)); }, { concurrency: 8, onError: () => {} });
  const listed = await walk(queue, 'ready', 40, 5);
  await worker.shutdown();
  const end = new Set(await walk(queue, 'ready', 1000));
  assert.ok(end.size > 0 && end.size < 2500, `${end.size} left`);
  assert.equal(new Set(listed).size, listed.length, 'a job was listed twice');
  const seen = new Set(listed);
  const skipped = [...start].filter((id) => end.has(id) && !seen.has(id));
  assert.deepEqual(skipped, [], 'jobs that stayed ready were skipped');
});

test('jobsPage walks each state as jobs() lists it and rejects a cursor it did not make with INVALID_ARGUMENT', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'late', delayMs: 30_000 });
  await queue.enqueue(Buffer.from('x'), { id: 'soon', delayMs: 10_000 });
  await queue.enqueueMany([{ payload: Buffer.from('x'), id: 'a' }, { payload: Buffer.from('x'), id: 'b', priority: 2 }, { payload: Buffer.from('x'), id: 'c', group: 'g' }]);
  assert.deepEqual(await walk(queue, 'delayed', 1), ['soon', 'late']);
  assert.deepEqual(await walk(queue, 'ready', 1), ['a', 'b', 'c']);
  assert.deepEqual(await walk(queue, 'dead', 1), []);
  const page = await queue.jobsPage('ready', { limit: 1 });
  assert.deepEqual(Object.keys(page).sort(), ['cursor', 'jobs']);
  assert.equal(page.jobs[0].state, 'ready');
  await rejectsWith(() => queue.jobsPage('delayed', { cursor: page.cursor }), 'INVALID_ARGUMENT', Error, /cursor/);
  await rejectsWith(() => queue.jobsPage('ready', { cursor: 'nonsense' }), 'INVALID_ARGUMENT', Error, /cursor/);
  await rejectsWith(() => queue.jobsPage('ready', { limit: 0 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.jobsPage('ready', { limit: 1001 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.jobsPage('finished'), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.jobsPage('ready', { offset: 1 }), 'INVALID_ARGUMENT', Error, /unknown option "offset"/);
});
