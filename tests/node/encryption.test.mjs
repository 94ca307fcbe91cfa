// Encryption at rest from Node (issue 45, part 1): the `encryption` queue option with keys and
// a keyProvider; values read back in clear with the key, a job sealed with a key the worker
// lacks is dead-lettered naming it, bad keys throw at construction. The core keeps the rules
// (core/tests/encryption.rs).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} };
const key = (b) => Buffer.alloc(32, b);

test('payloads, results, progress, logs and errors round-trip sealed, and rotation keeps old jobs readable', async () => {
  const { queue, client } = freshJobQueue(redis.url, { maxAttempts: 1, encryption: { currentKey: 'k1', keys: { k1: key(1) } } });
  await queue.enqueue(Buffer.from('ok'), { id: 'a' });
  await queue.enqueue(Buffer.from('fail'), { id: 'b' });
  const asked = [];
  const rotated = new tideq.Queue(queue.name, {
    client,
    maxAttempts: 1,
    encryption: { currentKey: 'k2', keys: { k2: key(2) }, keyProvider: (id) => { asked.push(id); return id === 'k1' ? key(1) : null; } },
  });
  await rotated.run(async (job) => {
    await job.progress({ step: 1 });
    await job.log(`line ${job.text()}`);
    if (job.text() === 'fail') throw new Error('secret failure');
    return { echo: job.text() };
  }, drained);
  assert.deepEqual(asked, ['k1']);
  const a = await rotated.get('a');
  assert.equal(a.state, 'completed');
  assert.deepEqual(a.result, { echo: 'ok' });
  assert.deepEqual(a.progress, { step: 1 });
  assert.equal(a.logs[0].line, 'line ok');
  const b = await rotated.get('b');
  assert.equal(b.state, 'dead');
  assert.equal(b.lastError, 'Error: secret failure');
  // The first handle has no k2: what the worker wrote shows as sealed, its key named.
  const seen = await queue.get('b');
  assert.equal(seen.lastError, 'encrypted (key k2)');
});

test('a job sealed with a key the worker lacks is dead-lettered naming the key', async () => {
  const { queue, client } = freshJobQueue(redis.url, { encryption: { currentKey: 'k9', keys: { k9: key(9) } } });
  await queue.enqueue(Buffer.from('x'), { id: 'j', maxAttempts: 5 });
  const other = new tideq.Queue(queue.name, { client, encryption: { currentKey: 'k1', keys: { k1: key(1) } } });
  let ran = 0;
  await other.run(() => { ran += 1; }, drained);
  assert.equal(ran, 0);
  const info = await other.get('j');
  assert.equal(info.state, 'dead');
  assert.match(info.lastError, /"k9" is not available/);
});

test('bad keys throw INVALID_ARGUMENT at construction', () => {
  const bad = [
    { currentKey: 'k1', keys: { k1: key(1).subarray(0, 16) } },
    { currentKey: 'k2', keys: { k1: key(1) } },
    { currentKey: 'k1', keyProvider: () => null },
    { currentKey: 'bad id', keys: { 'bad id': key(1) } },
    { keys: { k1: key(1) } },
  ];
  for (const encryption of bad) {
    assert.throws(() => new tideq.Queue('q', { url: redis.url, encryption }), (e) => e.code === 'INVALID_ARGUMENT', JSON.stringify(encryption));
  }
  assert.throws(() => new tideq.Queue('q', { url: redis.url, encryption: { currentKey: 'k1', keys: { k1: 'a string' } } }), TypeError);
});

test('an async keyProvider: its Promise is awaited for the current key and for old ones, and a rejection names the key', async () => {
  const { queue, client } = freshJobQueue(redis.url, { maxAttempts: 1, encryption: { currentKey: 'k1', keys: { k1: key(1) } } });
  await queue.enqueue(Buffer.from('old'), { id: 'old' });
  // Like a key service's client: answers later, on the event loop.
  const asked = [];
  const keyService = async (id) => {
    asked.push(id);
    await new Promise((r) => setTimeout(r, 20));
    return { k1: key(1), k2: key(2) }[id] ?? null;
  };
  const q = new tideq.Queue(queue.name, { client, maxAttempts: 1, encryption: { currentKey: 'k2', keyProvider: keyService } });
  await q.enqueue(Buffer.from('new'), { id: 'new' });
  const seen = [];
  await q.run(async (job) => { seen.push(job.text()); return job.text().toUpperCase(); }, drained);
  assert.deepEqual(seen.sort(), ['new', 'old']);
  assert.deepEqual((await q.get('new')).result, 'NEW');
  // Asked at construction (answer not awaited there), then at first use, then for k1.
  assert.deepEqual(asked.filter((id) => id === 'k1'), ['k1']);
  assert.ok(asked.includes('k2'), JSON.stringify(asked));
  // An async provider with no current key: the first enqueue fails naming it, writing nothing.
  const none = new tideq.Queue(queue.name, { client, encryption: { currentKey: 'k7', keyProvider: async () => null } });
  await assert.rejects(none.enqueue(Buffer.from('x'), { id: 'x' }), (e) => e.code === 'INVALID_ARGUMENT' && /"k7" is not available/.test(e.message));
  const failing = new tideq.Queue(queue.name, { client, encryption: { currentKey: 'k8', keyProvider: async () => { throw new Error('key service down'); } } });
  await assert.rejects(failing.enqueue(Buffer.from('y'), { id: 'y' }), (e) => e.code === 'INVALID_ARGUMENT' && /"k8" is not available/.test(e.message));
  assert.equal(await q.get('x'), null);
  assert.equal(await q.get('y'), null);
});
