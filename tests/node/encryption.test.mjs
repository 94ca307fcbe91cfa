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
