// Encryption at rest for the capped queue from Node (issue 45, part 1): the `encryption` option of
// `new CappedQueue` leaves nothing in clear in Redis and pops in clear; an item a handle cannot
// open is kept in the unreadable list naming its key, and comes back with the key. The core keeps
// the rules (core/tests/capped_encryption.rs).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshQueue, keysWithPrefix, redisCommand, rejectsWith, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const key = (b) => Buffer.alloc(32, b);
const MARKER = 'capped-plaintext-marker';

/** Every key under `prefix` and what it holds, read by type, as Buffers/strings. */
async function everyValue(prefix) {
  const out = [];
  for (const k of await keysWithPrefix(redis.url, prefix)) {
    const type = await redisCommand(redis.url, 'TYPE', k);
    const read = {
      list: ['LRANGE', k, 0, -1],
      hash: ['HGETALL', k],
      zset: ['ZRANGE', k, 0, -1],
      set: ['SMEMBERS', k],
      string: ['GET', k],
    }[type];
    const v = await redisCommand(redis.url, ...read);
    out.push(String(k), ...[v].flat().map(String));
  }
  return out;
}

test('items round-trip sealed, with nothing in clear in Redis', async () => {
  const { queue, prefix } = freshQueue(redis.url, { encryption: { currentKey: 'k1', keys: { k1: key(1) } } });
  await queue.pushMany([0, 1, 2].map((i) => ['g', `${MARKER}-${i}`]));
  await queue.push('h', `${MARKER}-h`);
  assert.ok(!(await everyValue(prefix)).some((v) => v.includes(MARKER)));
  const peeked = await queue.peek('g');
  assert.deepEqual(peeked.map((p) => p.item.toString()), [0, 1, 2].map((i) => `${MARKER}-${i}`));
  assert.ok(peeked.every((p) => p.unreadable == null));
  assert.deepEqual((await queue.popBatch('g', 1)).map(String), [`${MARKER}-0`]);
  const batch = await queue.nextBatch(10);
  assert.ok(batch.items.map(String).every((s) => s.startsWith(MARKER)));
  // The check does see a clear item.
  const clear = freshQueue(redis.url);
  await clear.queue.push('g', MARKER);
  assert.ok((await everyValue(clear.prefix)).some((v) => v.includes(MARKER)));
});

test('items a handle cannot open are kept unreadable naming the key, and requeued once it is back', async () => {
  const { queue, client } = freshQueue(redis.url, { encryption: { currentKey: 'k9', keys: { k9: key(9) } } });
  await queue.pushMany([['g', 'secret-1'], ['g', 'secret-2']]);
  const lacking = new tideq.CappedQueue(queue.name, { client, encryption: { currentKey: 'k1', keys: { k1: key(1) } } });
  const [p] = await lacking.peek('g', { max: 1 });
  assert.match(p.unreadable, /"k9"/);
  assert.ok(!p.item.toString().includes('secret'));
  assert.deepEqual(await lacking.popBatch('g', 10), []);
  const kept = await lacking.unreadable();
  assert.deepEqual(kept.map((u) => [u.group, u.keyId]), [['g', 'k9'], ['g', 'k9']]);
  assert.match(kept[0].error, /"k9"/);
  assert.ok(Buffer.isBuffer(kept[0].item) && typeof kept[0].atMs === 'number');
  const stats = await lacking.stats();
  assert.deepEqual([stats.delivered, stats.unreadable, stats.requeued], [0, 2, 0]);
  assert.equal(await lacking.requeueUnreadable(), 0);
  const restored = new tideq.CappedQueue(queue.name, { client, encryption: { currentKey: 'k1', keys: { k1: key(1), k9: key(9) } } });
  assert.equal(await restored.requeueUnreadable(), 2);
  assert.deepEqual(await restored.unreadable({ max: 10 }), []);
  assert.deepEqual((await restored.popBatch('g', 10)).map(String), ['secret-1', 'secret-2']);
  await rejectsWith(() => restored.unreadable({ max: 1001 }), 'INVALID_ARGUMENT');
});

test('a bad key throws INVALID_ARGUMENT from the constructor', () => {
  assert.throws(
    () => new tideq.CappedQueue('q', { url: redis.url, encryption: { currentKey: 'k1', keys: { k1: key(1).subarray(0, 16) } } }),
    (e) => e.code === 'INVALID_ARGUMENT' && /32 bytes/.test(e.message),
  );
});
