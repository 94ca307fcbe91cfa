// Queue control through the Node binding: priorities, groups (round-robin, concurrency limits),
// start rates, pause/resume of the queue or a group, group(name) and groups(), and bad input
// refused before anything is written. Mirrors core/tests/control_*.rs; the ordering tests read the
// order with leaseJobs (deterministic), the limit tests run real workers.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, sleep, tideq, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const { MAX_PRIORITY } = tideq;

/** Leases everything ready, completing each job; resolves with the payloads in lease order. */
async function leaseAll(queue) {
  const order = [];
  for (;;) {
    const jobs = await queue.leaseJobs(100);
    if (jobs.length === 0) return order;
    for (const job of jobs) {
      await queue.complete(job);
      order.push(job.text());
    }
  }
}

test('priorities: jobs without one run first, then priority 1 first, in order within a priority', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.equal(MAX_PRIORITY, 2 ** 21 - 1);
  for (const [text, priority] of [
    ['plain-1'],
    ['p5-1', 5],
    ['p1-1', 1],
    ['p5-2', 5],
    ['plain-2'],
    ['p1-2', 1],
    ['last', MAX_PRIORITY],
    ['p1-3', 1],
  ]) {
    await queue.enqueue(Buffer.from(text), priority === undefined ? {} : { priority });
  }
  assert.deepEqual(await leaseAll(queue), ['plain-1', 'plain-2', 'p1-1', 'p1-2', 'p1-3', 'p5-1', 'p5-2', 'last']);
});

test('groups are served round-robin: a big group does not starve small ones', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueMany(Array.from({ length: 300 }, (_, i) => ({ payload: Buffer.from(`big-${i}`), group: 'big' })));
  const small = [];
  for (let g = 0; g < 5; g++) {
    for (let i = 0; i < 3; i++) small.push({ payload: Buffer.from(`small${g}-${i}`), group: `tenant-${g}` });
  }
  await queue.enqueueMany(small);
  const order = await leaseAll(queue);
  assert.equal(order.length, 315);
  const lastSmall = Math.max(...order.map((t, i) => (t.startsWith('small') ? i : -1)));
  // One job per group per turn: the small groups are done after 3 turns of 6 groups (18 jobs),
  // while the big group has had 3; a generous bound, far from the 315 of FIFO.
  assert.ok(lastSmall < 40, `the last small job was leased at position ${lastSmall}`);
  // Each group in its own order.
  assert.deepEqual(order.filter((t) => t.startsWith('small0')), ['small0-0', 'small0-1', 'small0-2']);
  assert.deepEqual(order.filter((t) => t.startsWith('big')).slice(0, 3), ['big-0', 'big-1', 'big-2']);
});

test('group concurrency is never exceeded: the queue default and a group of its own', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setLimits({ groupConcurrency: 2 });
  await queue.setGroupLimits('solo', { concurrency: 1 });
  const jobs = [];
  for (const group of ['a', 'b', 'solo']) {
    for (let i = 0; i < 8; i++) jobs.push({ payload: Buffer.from(group), group });
  }
  await queue.enqueueMany(jobs);
  const active = { a: 0, b: 0, solo: 0 };
  const most = { a: 0, b: 0, solo: 0 };
  const stats = await queue
    .work(
      async (job) => {
        const group = job.text();
        active[group]++;
        most[group] = Math.max(most[group], active[group]);
        await sleep(20);
        active[group]--;
      },
      { concurrency: 10, stopWhenDrained: true, pollIntervalMs: 100 },
    )
    .join();
  assert.equal(stats.completed, 24);
  assert.ok(most.a <= 2 && most.b <= 2, JSON.stringify(most));
  assert.equal(most.solo, 1, JSON.stringify(most));
});

test('a rate limit is read back, and starts are limited (limited jobs stay ready)', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.deepEqual(await queue.limits(), { maxActive: null, rate: null, groupConcurrency: null, groupRate: null });
  // A long window, so the check does not depend on timing.
  await queue.setLimits({ rate: { max: 2, perMs: 60_000 }, maxActive: 50, groupRate: { max: 3, perMs: 1500 } });
  assert.deepEqual(await queue.limits(), {
    maxActive: 50,
    rate: { max: 2, perMs: 60_000 },
    groupConcurrency: null,
    groupRate: { max: 3, perMs: 1500 },
  });
  await queue.enqueueMany(Array.from({ length: 6 }, (_, i) => Buffer.from(String(i))));
  let started = 0;
  const worker = queue.work(() => void started++, { concurrency: 10, pollIntervalMs: 100 });
  await waitFor(() => started >= 2, 'the first two starts');
  await sleep(500);
  assert.equal(started, 2, 'no third start within the window');
  const s = await queue.stats();
  assert.deepEqual([s.ready, s.delayed], [4, 0], 'limited jobs wait where they are');
  // setLimits replaces every limit: without the rate the rest run.
  await queue.setLimits({});
  assert.deepEqual(await queue.limits(), { maxActive: null, rate: null, groupConcurrency: null, groupRate: null });
  await waitFor(() => started === 6, 'the other four once the limit is gone', 15_000);
  await worker.shutdown();
});

test('a token bucket rate starts its burst at once, then no more; it reads back with its burst', async () => {
  const { queue } = freshJobQueue(redis.url);
  const bucket = { max: 1, perMs: 60_000, burst: 4 }; // one a minute, four at once
  await queue.setLimits({ rate: bucket, groupRate: { max: 1, perMs: 60_000, burst: 2 } });
  assert.deepEqual(await queue.limits(), {
    maxActive: null, rate: bucket, groupConcurrency: null, groupRate: { max: 1, perMs: 60_000, burst: 2 },
  });
  await queue.enqueueMany(Array.from({ length: 10 }, () => Buffer.from('x')));
  assert.equal((await queue.leaseJobs(10)).length, 4);
  assert.equal((await queue.leaseJobs(10)).length, 0);
  await queue.setLimits({});
  await queue.setGroupLimits('metered', { rate: { max: 1, perMs: 60_000, burst: 3 } });
  await queue.enqueueMany(Array.from({ length: 5 }, () => ({ payload: Buffer.from('m'), group: 'metered' })));
  const leased = await queue.leaseJobs(20);
  assert.equal(leased.filter((j) => j.text() === 'm').length, 3, 'the group its burst; the 6 plain jobs left run too');
  assert.deepEqual((await queue.group('metered')).rate, { max: 1, perMs: 60_000, burst: 3 });
});

test("a job's cost takes that many tokens from a bucket, and a costly job keeps its place", async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setLimits({ rate: { max: 1, perMs: 60_000, burst: 10 } }); // nothing refills in the test
  const big = await queue.enqueue(Buffer.from('big'), { cost: 8 });
  await queue.enqueueMany([{ payload: Buffer.from('four'), cost: 4 }, Buffer.from('one')]);
  assert.equal((await queue.get(big.id)).cost, 8);
  assert.deepEqual((await queue.leaseJobs(10)).map((j) => j.text()), ['big']);
  // 2 tokens left: 'four' waits for its 4, and 'one' behind it does not overtake it.
  assert.deepEqual(await queue.leaseJobs(10), []);
  assert.equal((await queue.stats()).ready, 2);
  const plain = await queue.enqueue(Buffer.from('plain'));
  assert.equal((await queue.get(plain.id)).cost, 1);
  assert.equal(tideq.MAX_COST, 1_000_000);
});

test('a bad cost rejects with INVALID_ARGUMENT and writes nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const cost of [0, -1, 1_000_001, 1.5]) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { cost }), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.enqueueMany([Buffer.from('ok'), { payload: Buffer.from('x'), cost }]), 'INVALID_ARGUMENT');
  }
  assert.equal((await queue.stats()).enqueued, 0);
});

test('pause/resume: a paused queue leases nothing, resume wakes an idle worker; a paused group waits', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.pause();
  assert.equal(await queue.isPaused(), true);
  assert.equal((await queue.stats()).paused, true);
  await queue.enqueueMany([Buffer.from('1'), Buffer.from('2'), Buffer.from('3')]);
  assert.deepEqual(await queue.leaseJobs(10), [], 'leaseJobs gets nothing from a paused queue');
  const ran = [];
  // A poll interval far longer than the test: only resume() can wake it.
  const worker = queue.work((job) => void ran.push(job.text()), { pollIntervalMs: 600_000 });
  await sleep(400);
  assert.deepEqual(ran, [], 'a paused queue starts nothing');
  assert.equal((await queue.stats()).ready, 3);
  await queue.resume();
  assert.equal(await queue.isPaused(), false);
  await waitFor(() => ran.length === 3, 'resume to wake the worker', 5_000);

  await queue.pauseGroup('held');
  await queue.enqueue(Buffer.from('held-1'), { group: 'held' });
  await queue.enqueue(Buffer.from('free-1'), { group: 'free' });
  await waitFor(() => ran.includes('free-1'), 'the other group to run');
  await sleep(300);
  assert.ok(!ran.includes('held-1'), 'a paused group starts nothing');
  assert.equal((await queue.group('held')).paused, true);
  await queue.resumeGroup('held');
  await waitFor(() => ran.includes('held-1'), 'resumeGroup to let it run', 5_000);
  await worker.shutdown();
});

/** A group's info but its latency, which only group(name) reads (null in lists). */
function timeless({ latencyMs, ...rest }) {
  assert.ok(latencyMs === null || typeof latencyMs === 'number');
  return rest;
}

test('groups() lists every known group by name, as group(name) tells each', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.deepEqual(await queue.groups(), []);
  await queue.pauseGroup('slow');
  await queue.enqueue(Buffer.from('s'), { group: 'slow' });
  await queue.enqueue(Buffer.from('s'), { group: 'slow' });
  await queue.enqueue(Buffer.from('f'), { group: 'fast' });
  const groups = await queue.groups();
  assert.deepEqual(
    groups.map((g) => [g.group, g.ready, g.paused]),
    [['fast', 1, false], ['slow', 2, true]],
  );
  assert.deepEqual(timeless(groups[1]), timeless(await queue.group('slow')));
});

test('groupsPage walks every group once by cursor, and refuses a bad cursor or count', async () => {
  const { queue } = freshJobQueue(redis.url);
  const jobs = [];
  for (let g = 0; g < 1200; g++) jobs.push({ payload: Buffer.from('x'), group: `tenant-${g}` });
  await queue.enqueueMany(jobs);
  await queue.pauseGroup('settings-only');
  const seen = new Map();
  let cursor = null;
  let pages = 0;
  do {
    const page = await queue.groupsPage({ cursor, count: 200 });
    pages += 1;
    for (const g of page.groups) {
      assert.ok(!seen.has(g.group), 'a group was listed twice');
      seen.set(g.group, g);
    }
    cursor = page.cursor;
  } while (cursor !== null);
  assert.equal(seen.size, 1201);
  assert.ok(pages >= 3);
  assert.deepEqual(timeless(seen.get('tenant-7')), timeless(await queue.group('tenant-7')));
  assert.equal(seen.get('settings-only').paused, true);
  assert.ok((await queue.groupsPage()).groups.length >= 100);
  await rejectsWith(() => queue.groupsPage({ count: 0 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.groupsPage({ count: 251 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.groupsPage({ cursor: 'nope' }), 'INVALID_ARGUMENT');
});

test('one id over groups of a sharded queue is refused, not made into a job per shard', async () => {
  const { queue: one, client } = freshJobQueue(redis.url);
  const sharded = new tideq.Queue('sharded', { client, shards: 3 });
  for (const opts of [{ id: 'same-id' }, { dedup: { key: 'order-42' } }, { debounce: { key: 'order-42', delayMs: 1000 } }]) {
    await rejectsWith(() => sharded.enqueue(Buffer.from('x'), { group: 'tenant-1', ...opts }), 'INVALID_ARGUMENT');
  }
  assert.equal((await sharded.stats()).enqueued, 0);
  const created = [];
  for (const g of ['a', 'b', 'c']) created.push((await one.enqueue(Buffer.from('x'), { group: g, id: 'same-id' })).created);
  assert.deepEqual(created, [true, false, false]);
});

test('group(name) reports ready and running jobs, paused, and the limits in force; get shows priority and group', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setLimits({ groupConcurrency: 3, groupRate: { max: 5, perMs: 1000 } });
  await queue.enqueue(Buffer.from('a'), { group: 'g', priority: 7, id: 'a' });
  await queue.enqueue(Buffer.from('b'), { group: 'g', id: 'b' });
  assert.deepEqual(timeless(await queue.group('g')), {
    group: 'g',
    ready: 2,
    active: 0,
    paused: false,
    concurrency: 3,
    rate: { max: 5, perMs: 1000 },
    limiter: null,
  });
  await queue.setGroupLimits('g', { concurrency: 1 });
  assert.deepEqual(timeless(await queue.group('g')), {
    group: 'g',
    ready: 2,
    active: 0,
    paused: false,
    concurrency: 1,
    rate: { max: 5, perMs: 1000 },
    limiter: null,
  });
  const [job] = await queue.leaseJobs(5);
  assert.equal(job.id, 'b', 'no priority runs first');
  const info = await queue.group('g');
  assert.deepEqual([info.ready, info.active], [1, 1]);
  assert.deepEqual(await queue.leaseJobs(5), [], 'the group is at its concurrency limit');
  const a = await queue.get('a');
  assert.deepEqual([a.priority, a.group, a.state], [7, 'g', 'ready']);
  const b = await queue.get('b');
  assert.deepEqual([b.priority, b.group, b.state], [null, 'g', 'active']);
  await queue.setGroupLimits('g', {});
  assert.equal((await queue.group('g')).concurrency, 3, 'back to the queue default');
  assert.deepEqual(await queue.group('empty'), { group: 'empty', ready: 0, active: 0, paused: false, concurrency: 3, rate: { max: 5, perMs: 1000 }, latencyMs: 0, limiter: null });
});

test('bad queue control input rejects with INVALID_ARGUMENT and writes nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  for (const limits of [
    { rate: { max: 0, perMs: 1000 } },
    { rate: { max: 1, perMs: 0 } },
    { groupRate: { max: 0, perMs: 10 } },
    { rate: { max: 1, perMs: 1000, burst: 0 } },
    { groupRate: { max: 1, perMs: 1000, burst: -1 } },
    { maxActive: 0 },
    { groupConcurrency: 0 },
  ]) {
    await rejectsWith(() => queue.setLimits(limits), 'INVALID_ARGUMENT', Error, undefined);
  }
  await rejectsWith(() => queue.setLimits({ rate: { max: 1 } }), 'INVALID_ARGUMENT', Error, /perMs is required/);
  await rejectsWith(() => queue.setLimits({ rate: { max: 1, per: 10 } }), 'INVALID_ARGUMENT', Error, /unknown option "per"/);
  await rejectsWith(() => queue.setLimits({ maxRunning: 3 }), 'INVALID_ARGUMENT', Error, /unknown option "maxRunning"/);
  await rejectsWith(() => queue.setLimits({ maxActive: -1 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.setGroupLimits('g', { concurrency: 0 }), 'INVALID_ARGUMENT', Error, /concurrency/);
  await rejectsWith(() => queue.setGroupLimits('g', { rate: { max: 0, perMs: 5 } }), 'INVALID_ARGUMENT', Error, /rate limit/);
  for (const group of ['', '{bad}', 'a}b', 'x'.repeat(257), 'tab\there']) {
    await rejectsWith(() => queue.pauseGroup(group), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.resumeGroup(group), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.setGroupLimits(group, { concurrency: 1 }), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.group(group), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { group }), 'INVALID_ARGUMENT');
  }
  await rejectsWith(() => queue.pauseGroup(5), 'INVALID_ARGUMENT', TypeError, /group must be a string/);
  for (const priority of [0, MAX_PRIORITY + 1]) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { priority }), 'INVALID_ARGUMENT', Error, /priority must be 1 \(first\) to 2097151/);
    await rejectsWith(() => queue.enqueueMany([Buffer.from('ok'), { payload: Buffer.from('x'), priority }]), 'INVALID_ARGUMENT');
  }
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { priority: 1.5 }), 'INVALID_ARGUMENT', Error, /priority/);
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'bad input wrote to Redis');
});
