// The capped queue's operations, through the Node binding, against a real redis-server.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshQueue, rejectsWith, sleep, tideq, unique, useRedis } from './harness.mjs';

const redis = useRedis();
const str = (items) => items.map((b) => b.toString());

test('push resolves with how many items it dropped, and the cap holds', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 3 });
  const drops = [];
  for (const item of ['a', 'b', 'c', 'd', 'e']) drops.push(await queue.push('g', item));
  assert.deepEqual(drops, [0, 0, 0, 1, 1]);
  assert.equal(await queue.len('g'), 3);
  assert.deepEqual(str(await queue.popBatch('g', 10)), ['c', 'd', 'e']);
});

test('pushMany writes every pair in one call and resolves with the drops per item', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 2 });
  const drops = await queue.pushMany([
    ['g1', 'a'],
    ['g2', 'x'],
    ['g1', 'b'],
    ['g1', 'c'],
    ['g1', 'd'],
  ]);
  assert.deepEqual(drops, [0, 0, 0, 1, 1]);
  assert.deepEqual(await queue.pushMany([]), []);
  assert.deepEqual(str(await queue.popBatch('g1', 10)), ['c', 'd']);
  assert.deepEqual(str(await queue.popBatch('g2', 10)), ['x']);
});

test('popBatch returns exactly max items when that many are queued, oldest first', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 1000 });
  const items = Array.from({ length: 300 }, (_, i) => `item-${i}`);
  await queue.pushMany(items.map((item) => ['g', item]));
  const first = await queue.popBatch('g', 128);
  assert.equal(first.length, 128);
  assert.deepEqual(str(first), items.slice(0, 128));
  assert.deepEqual(str(await queue.popBatch('g', 128)), items.slice(128, 256));
  assert.deepEqual(str(await queue.popBatch('g', 128)), items.slice(256));
  assert.deepEqual(await queue.popBatch('g', 128), []);
  assert.deepEqual(await queue.popBatch('never-pushed', 5), []);
});

test('groupsPage walks the groups holding data once by cursor', async () => {
  const { queue } = freshQueue(redis.url, { shards: 2 });
  const pairs = [];
  for (let i = 0; i < 700; i++) pairs.push([`g${i}`, Buffer.from('x')]);
  await queue.pushMany(pairs);
  const seen = [];
  let page = await queue.groupsPage({ count: 250 });
  seen.push(...page.groups);
  while (page.cursor !== null) {
    page = await queue.groupsPage({ cursor: page.cursor, count: 250 });
    seen.push(...page.groups);
  }
  assert.equal(seen.length, 700);
  assert.equal(new Set(seen).size, 700);
  await rejectsWith(() => queue.groupsPage({ count: 0 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.groupsPage({ cursor: '5-0' }), 'INVALID_ARGUMENT');
});

test('nextBatch serves groups round-robin and resolves with null when every group is drained', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 1000 });
  const groups = ['a', 'b', 'c'];
  const pairs = [];
  for (let i = 0; i < 4; i++) for (const g of groups) pairs.push([g, `${g}${i}`]);
  await queue.pushMany(pairs);
  assert.deepEqual((await queue.groups()).sort(), groups);

  const served = [];
  const next = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 6; i++) {
    const { group, items } = await queue.nextBatch(2);
    assert.ok(items.every((b) => Buffer.isBuffer(b)));
    assert.deepEqual(str(items), [`${group}${next[group]}`, `${group}${next[group] + 1}`]);
    next[group] += 2;
    served.push(group);
  }
  // Each window of three consecutive batches visits every group once.
  assert.deepEqual(served.slice(0, 3).sort(), groups);
  assert.deepEqual(served.slice(3, 6).sort(), groups);
  assert.equal(await queue.nextBatch(2), null);
  assert.deepEqual(await queue.groups(), []);
});

test('Buffer, Uint8Array and string items come back as identical bytes', async () => {
  const { queue } = freshQueue(redis.url);
  const bytes = Buffer.from([0, 1, 2, 0xff, 0x3a, 0x7b, 0x7d, 10]);
  const text = 'é✓ unicode: {braces} and colons:';
  await queue.push('g', bytes);
  await queue.push('g', new Uint8Array(bytes));
  await queue.push('g', new Uint8Array(bytes.buffer, bytes.byteOffset + 2, 3)); // a view with an offset
  await queue.push('g', text);
  await queue.push('g', Buffer.from(text, 'utf8'));
  await queue.push('g', '');
  await queue.pushMany([['g', new Uint8Array(bytes)], ['g', text]]);
  const got = await queue.popBatch('g', 100);
  assert.deepEqual(got, [
    bytes,
    bytes,
    bytes.subarray(2, 5),
    Buffer.from(text),
    Buffer.from(text),
    Buffer.alloc(0),
    bytes,
    Buffer.from(text),
  ]);
  assert.equal(got[3].toString('utf8'), text);
});

test('stats count pushed, dropped, delivered and groups', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 2 });
  await queue.pushMany([['a', '1'], ['a', '2'], ['a', '3'], ['b', '1']]);
  assert.deepEqual(await queue.stats(), { pushed: 4, dropped: 1, discarded: 0, delivered: 0, groups: 2, unreadable: 0, requeued: 0 });
  await queue.popBatch('a', 10);
  assert.deepEqual(await queue.stats(), { pushed: 4, dropped: 1, discarded: 0, delivered: 2, groups: 1, unreadable: 0, requeued: 0 });
});

test('maxAgeMs discards stale items instead of delivering them', async () => {
  const { queue } = freshQueue(redis.url, { maxAgeMs: 50 });
  await queue.push('g', 'stale');
  await sleep(120);
  await queue.push('g', 'fresh');
  assert.deepEqual(str(await queue.popBatch('g', 10)), ['fresh']);
  const stats = await queue.stats();
  assert.equal(stats.discarded, 1);
  assert.equal(stats.delivered, 1);
});

test('ttlMs: a group that receives nothing for ttlMs disappears; null means never', async () => {
  const client = new tideq.Client({ url: redis.url, prefix: unique('t') });
  const expiring = new tideq.CappedQueue(unique('q'), { client, ttlMs: 100 });
  const forever = new tideq.CappedQueue(unique('q'), { client, ttlMs: null, capacity: 7 });
  assert.equal(expiring.ttlMs, 100);
  assert.equal(forever.ttlMs, null);
  assert.equal(forever.capacity, 7);
  assert.equal(forever.maxAgeMs, null);
  assert.equal(new tideq.CappedQueue(unique('q'), { client }).ttlMs, 86_400_000);
  await expiring.push('g', 'x');
  await forever.push('g', 'x');
  await sleep(300);
  assert.equal(await expiring.len('g'), 0);
  assert.equal(await forever.len('g'), 1);
  assert.equal(await expiring.nextBatch(10), null);
});

test('handles on one queue share it: a Client can serve several queues', async () => {
  const client = new tideq.Client({ url: redis.url, prefix: unique('t') });
  const name = unique('q');
  const a = new tideq.CappedQueue(name, { client });
  const b = new tideq.CappedQueue(name, { client });
  await a.push('g', 'from-a');
  assert.deepEqual(str(await b.popBatch('g', 5)), ['from-a']);
  await client.ping();
  assert.equal(client.prefix.startsWith('t-'), true);
});

test('peek shows the oldest items with their push time and takes nothing', async () => {
  const { queue } = freshQueue(redis.url, { capacity: 1000 });
  const before = Date.now();
  await queue.pushMany(Array.from({ length: 12 }, (_, i) => ['g', `i${i}`]));
  const after = Date.now();
  const first = await queue.peek('g', { max: 3 });
  assert.deepEqual(str(first.map((p) => p.item)), ['i0', 'i1', 'i2']);
  for (const p of first) {
    assert.ok(Buffer.isBuffer(p.item));
    // The Redis clock is this machine's clock here.
    assert.ok(p.pushedAtMs >= before - 1000 && p.pushedAtMs <= after + 1000, `${p.pushedAtMs}`);
  }
  assert.equal((await queue.peek('g')).length, 10, 'max defaults to 10');
  assert.equal(await queue.len('g'), 12);
  assert.equal((await queue.stats()).delivered, 0);
  assert.deepEqual(str(await queue.popBatch('g', 2)), ['i0', 'i1']);
  assert.deepEqual(await queue.peek('never-pushed'), []);
});

test('peek leaves out items older than maxAgeMs, as a pop would discard them', async () => {
  const { queue } = freshQueue(redis.url, { maxAgeMs: 50 });
  await queue.push('g', 'stale');
  await sleep(120);
  await queue.push('g', 'fresh');
  assert.deepEqual(str((await queue.peek('g')).map((p) => p.item)), ['fresh']);
  assert.equal(await queue.len('g'), 2);
});

test('peek rejects a bad group or max with INVALID_ARGUMENT', async () => {
  const { queue } = freshQueue(redis.url);
  for (const max of [0, 1001]) {
    await assert.rejects(queue.peek('g', { max }), { code: 'INVALID_ARGUMENT', message: /max/ });
  }
  await assert.rejects(queue.peek('g', { max: -1 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(queue.peek('g', { mx: 3 }), { code: 'INVALID_ARGUMENT', message: /unknown option "mx"/ });
  await assert.rejects(queue.peek('a{b'), { code: 'INVALID_ARGUMENT' });
});
