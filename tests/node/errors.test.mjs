// Bad input and faults: every error carries the core's code on err.code and the caller's stack;
// wrong JS types are TypeErrors (also with code INVALID_ARGUMENT); nothing is written on bad
// input. Credentials and permissions Redis refuses (AUTH, PERMISSION) stop workers and consumers;
// a full Redis (OUT_OF_MEMORY) still serves reads; an evicting one can be refused.
// Mirrors core/tests/errors.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  freePort,
  freshJobQueue,
  freshQueue,
  keysWithPrefix,
  redisCommand,
  rejectsWith,
  startRedis,
  tideq,
  unique,
  useRedis,
} from './harness.mjs';

const redis = useRedis();
const { Client, CappedQueue, Queue } = tideq;

test('an item that is not bytes (number, object, array, null) is rejected with a clear TypeError and nothing is written', async () => {
  const { queue, prefix } = freshQueue(redis.url);
  for (const item of [42, { a: 1 }, [1, 2], null, undefined, true, new Float32Array(2)]) {
    const err = await rejectsWith(() => queue.push('g', item), 'INVALID_ARGUMENT', TypeError, /item must be a Buffer, Uint8Array or string/);
    assert.match(err.message, /got /);
  }
  // One bad item in a batch: the whole batch is refused.
  await rejectsWith(() => queue.pushMany([['g', 'ok'], ['g', 7]]), 'INVALID_ARGUMENT', TypeError, /items\[1\]\[1\]/);
  await rejectsWith(() => queue.pushMany('not an array'), 'INVALID_ARGUMENT', TypeError, /items must be an array/);
  await rejectsWith(() => queue.pushMany([['g']]), 'INVALID_ARGUMENT', TypeError, /\[group, item\] pair/);
  await rejectsWith(() => queue.push(5, 'x'), 'INVALID_ARGUMENT', TypeError, /group must be a string/);
  // The promise rejects (it does not throw synchronously), so .catch() sees the error.
  const p = queue.push('g', 42);
  assert.ok(p instanceof Promise);
  await assert.rejects(p, { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});

test('bad group or queue names are refused with code INVALID_ARGUMENT and nothing is written', async () => {
  const { queue, prefix } = freshQueue(redis.url);
  for (const group of ['', '{hot}', 'a}b', 'x'.repeat(257), 'tab\there']) {
    await rejectsWith(() => queue.push(group, 'x'), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.pushMany([['fine', 'x'], [group, 'x']]), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.popBatch(group, 1), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.len(group), 'INVALID_ARGUMENT');
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
  for (const name of ['', '{q}', 'x'.repeat(257)]) {
    await rejectsWith(() => new CappedQueue(name, { url: redis.url }), 'INVALID_ARGUMENT', Error, /queue name/);
  }
  await rejectsWith(() => new CappedQueue(42), 'INVALID_ARGUMENT', TypeError, /queue name must be a string/);
  await rejectsWith(() => new Client({ prefix: 'a{b' }), 'INVALID_ARGUMENT');
});

test('capacity 0 is refused with INVALID_ARGUMENT', async () => {
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, capacity: 0 }), 'INVALID_ARGUMENT', Error, /capacity/);
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, capacity: -1 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, capacity: 1.5 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, capacity: '10' }), 'INVALID_ARGUMENT', TypeError);
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, ttlMs: 0 }), 'INVALID_ARGUMENT', Error, /ttl/);
  const { queue } = freshQueue(redis.url);
  await rejectsWith(() => queue.popBatch('g', 0), 'INVALID_ARGUMENT', Error, /max/);
  await rejectsWith(() => queue.nextBatch(0), 'INVALID_ARGUMENT', Error, /max/);
});

test('options with a typo or of the wrong type are refused with INVALID_ARGUMENT', async () => {
  await rejectsWith(() => new CappedQueue(unique('q'), { url: redis.url, capcity: 5 }), 'INVALID_ARGUMENT', Error, /unknown option "capcity"/);
  await rejectsWith(() => new CappedQueue(unique('q'), 'redis://x'), 'INVALID_ARGUMENT', TypeError, /must be an object/);
  await rejectsWith(() => new CappedQueue(unique('q'), { client: {} }), 'INVALID_ARGUMENT', TypeError, /must be a tideq Client/);
  await rejectsWith(() => new CappedQueue(unique('q'), { client: new Client({ url: redis.url }), url: redis.url }), 'INVALID_ARGUMENT', Error, /either client or url/);
  await rejectsWith(() => new Client({ url: 'http://localhost' }), 'INVALID_ARGUMENT', Error, /unsupported Redis URL/);
  const { queue } = freshQueue(redis.url);
  await rejectsWith(() => queue.consume(() => {}, { batch_size: 5 }), 'INVALID_ARGUMENT', Error, /unknown option "batch_size"/);
  await rejectsWith(() => queue.consume('not a function'), 'INVALID_ARGUMENT', TypeError, /handler must be a function/);
  await rejectsWith(() => queue.consume(() => {}, { concurrency: 0 }), 'INVALID_ARGUMENT', Error, /concurrency/);
  await rejectsWith(() => queue.consume(() => {}, { groups: ['a'], exclude: ['b'] }), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.consume(() => {}, { onError: 'log' }), 'INVALID_ARGUMENT', TypeError, /onError must be a function/);
});

test('Client options naming more than one deployment, or an empty or incomplete one, are refused with INVALID_ARGUMENT', async () => {
  const sentinel = { sentinels: ['redis://127.0.0.1:26379'], masterName: 'm' };
  const cluster = ['redis://127.0.0.1:7000'];
  const several = /one of url, cluster and sentinel/;
  await rejectsWith(() => new Client({ url: redis.url, cluster }), 'INVALID_ARGUMENT', Error, several);
  await rejectsWith(() => new Client({ url: redis.url, sentinel }), 'INVALID_ARGUMENT', Error, several);
  await rejectsWith(() => new Client({ cluster, sentinel }), 'INVALID_ARGUMENT', Error, several);
  await rejectsWith(() => new Client({ url: redis.url, cluster, sentinel }), 'INVALID_ARGUMENT', Error, several);
  await rejectsWith(() => new Client({ cluster: [] }), 'INVALID_ARGUMENT', Error, /cluster must list at least one URL/);
  await rejectsWith(() => new Client({ sentinel: { sentinels: [], masterName: 'm' } }), 'INVALID_ARGUMENT', Error, /sentinels must list at least one URL/);
  await rejectsWith(() => new Client({ sentinel: { sentinels: ['redis://127.0.0.1:26379'] } }), 'INVALID_ARGUMENT', Error, /masterName is required/);
  await rejectsWith(() => new Client({ sentinel: { masterName: 'm' } }), 'INVALID_ARGUMENT', Error, /sentinels is required/);
  await rejectsWith(() => new Client({ sentinel: { ...sentinel, masterName: '' } }), 'INVALID_ARGUMENT', Error, /master name/);
  await rejectsWith(() => new Client({ sentinel: { ...sentinel, master: 'm' } }), 'INVALID_ARGUMENT', Error, /unknown option "master"/);
  await rejectsWith(() => new Client({ cluster: 'redis://127.0.0.1:7000' }), 'INVALID_ARGUMENT', TypeError, /cluster must be an array/);
  await rejectsWith(() => new Client({ cluster: ['redis://127.0.0.1:7000', 7001] }), 'INVALID_ARGUMENT', TypeError, /cluster\[1\] must be a string/);
  await rejectsWith(() => new Client({ cluster: ['unix:///tmp/redis.sock'] }), 'INVALID_ARGUMENT', Error, /unsupported Redis URL/);
  await rejectsWith(() => new Client({ sentinel: 'redis://127.0.0.1:26379' }), 'INVALID_ARGUMENT', TypeError, /sentinel must be an object/);
  // replicaAck needs both fields, at least one replica and at least 1 ms.
  for (const replicaAck of [{ replicas: 0, timeoutMs: 100 }, { replicas: 1, timeoutMs: 0 }, { replicas: 1 }, { timeoutMs: 100 }, { replicas: -1, timeoutMs: 100 }, { replicas: 1, timeoutMs: 100, wait: true }]) {
    await rejectsWith(() => new Client({ url: redis.url, replicaAck }), 'INVALID_ARGUMENT', Error, /replica/i);
  }
  await rejectsWith(() => new Client({ url: redis.url, replicaAck: 1 }), 'INVALID_ARGUMENT', TypeError);
  // Each kind alone is accepted (no connection is made until the first command).
  assert.equal(new Client({ cluster }).url, cluster[0]);
  assert.equal(new Client({ sentinel }).url, sentinel.sentinels[0]);
  new Client({ url: redis.url, replicaAck: { replicas: 2, timeoutMs: 50 } });
});

test('shards outside 1 to 1024, or a queue name with #, are refused with INVALID_ARGUMENT; shards defaults to 1', async () => {
  for (const Kind of [Queue, CappedQueue]) {
    const client = new Client({ url: redis.url });
    assert.equal(new Kind(unique('q'), { client }).shards, 1);
    assert.equal(new Kind(unique('q'), { client, shards: 1024 }).shards, 1024);
    await rejectsWith(() => new Kind(unique('q'), { client, shards: 0 }), 'INVALID_ARGUMENT', Error, /shards must be 1 to 1024/);
    await rejectsWith(() => new Kind(unique('q'), { client, shards: 1025 }), 'INVALID_ARGUMENT', Error, /shards must be 1 to 1024/);
    await rejectsWith(() => new Kind(unique('q'), { client, shards: 2.5 }), 'INVALID_ARGUMENT', Error, /whole number/);
    await rejectsWith(() => new Kind(unique('q'), { client, shards: -3 }), 'INVALID_ARGUMENT');
    await rejectsWith(() => new Kind(unique('q'), { client, shards: '3' }), 'INVALID_ARGUMENT', TypeError);
    await rejectsWith(() => new Kind('a#b', { client, shards: 3 }), 'INVALID_ARGUMENT', Error, /'#'/);
    await rejectsWith(() => new Kind('a#b', { client }), 'INVALID_ARGUMENT', Error, /'#'/);
  }
});

test('a sharded queue on a single server works like an unsharded one', async () => {
  const client = new Client({ url: redis.url, prefix: unique('t') });
  const jobs = new Queue(unique('q'), { client, shards: 4 });
  await jobs.enqueueMany(Array.from({ length: 40 }, (_, i) => ({ payload: Buffer.from(String(i)), id: `j${i}` })));
  assert.equal((await jobs.get('j17')).payload.toString(), '17');
  await jobs.cancel('j3');
  const seen = [];
  const w = await jobs.work((job) => void seen.push(job.id), { stopWhenDrained: true, pollIntervalMs: 100 }).join();
  assert.equal(w.completed, 39);
  assert.equal(new Set(seen).size, 39);
  const s = await jobs.stats();
  assert.deepEqual([s.enqueued, s.completed, s.cancelled, s.ready], [40, 39, 1, 0]);

  const capped = new CappedQueue(unique('q'), { client, shards: 4 });
  await capped.pushMany(Array.from({ length: 40 }, (_, i) => [`g${i % 10}`, String(i)]));
  const items = [];
  await capped.consume((group, batch) => void items.push(...batch.map(String)), { stopWhenEmpty: true, pollIntervalMs: 100 }).join();
  assert.equal(new Set(items).size, 40);
  assert.equal(items.length, 40);
});

test('a handle made with another shard count than the queue recorded is refused with INVALID_ARGUMENT, its worker and consumer stop on it, and nothing is written', async () => {
  const client = new Client({ url: redis.url, prefix: unique('t') });
  const name = unique('q');
  await new Queue(name, { client, shards: 4 }).enqueue(Buffer.from('x'));
  await new CappedQueue(name, { client, shards: 4 }).push('g', Buffer.from('x'));
  const before = (await keysWithPrefix(redis.url, client.prefix)).sort();
  const jobs = new Queue(name, { client, shards: 2 });
  await rejectsWith(() => jobs.enqueue(Buffer.from('y')), 'INVALID_ARGUMENT', Error, /has 4 shard\(s\).*not 2/);
  await rejectsWith(() => jobs.stats(), 'INVALID_ARGUMENT', Error, /has 4 shard\(s\)/);
  const worker = jobs.work(() => {});
  await rejectsWith(() => worker.join(), 'INVALID_ARGUMENT', Error, /has 4 shard\(s\)/);
  assert.equal(worker.error.code, 'INVALID_ARGUMENT');
  const capped = new CappedQueue(name, { client });
  await rejectsWith(() => capped.push('g', Buffer.from('y')), 'INVALID_ARGUMENT', Error, /capped queue/);
  await rejectsWith(() => capped.consume(() => {}).join(), 'INVALID_ARGUMENT');
  assert.deepEqual((await keysWithPrefix(redis.url, client.prefix)).sort(), before);
});

test('an item over maxPayload is refused with PAYLOAD_TOO_LARGE and nothing is written', async () => {
  const { queue, prefix } = freshQueue(redis.url, {}, { maxPayload: 1024 });
  await queue.push('g', Buffer.alloc(1024)); // exactly the limit is fine
  await rejectsWith(() => queue.push('g', Buffer.alloc(1025)), 'PAYLOAD_TOO_LARGE', Error, /1025 bytes/);
  await rejectsWith(() => queue.pushMany([['g', 'small'], ['g', 'x'.repeat(2000)]]), 'PAYLOAD_TOO_LARGE');
  assert.equal(await queue.len('g'), 1);
  const stats = await queue.stats();
  assert.equal(stats.pushed, 1);
  assert.ok((await keysWithPrefix(redis.url, prefix)).length > 0);

  // The default limit is 512 KiB.
  const big = freshQueue(redis.url);
  await rejectsWith(() => big.queue.push('g', Buffer.alloc(512 * 1024 + 1)), 'PAYLOAD_TOO_LARGE');
  assert.deepEqual(await keysWithPrefix(redis.url, big.prefix), []);
});

test('unreachable Redis is reported with code CONNECTION and the password never appears', async () => {
  const port = await freePort();
  const url = `redis://:s3cret@127.0.0.1:${port}`;
  const queue = new CappedQueue(unique('q'), { url });
  for (const call of [() => queue.push('g', 'x'), () => queue.popBatch('g', 1), () => queue.stats()]) {
    const err = await rejectsWith(call, 'CONNECTION');
    assert.ok(!err.message.includes('s3cret'), err.message);
    assert.ok(!String(err.stack).includes('s3cret'), err.stack);
  }
  const client = new Client({ url: `redis://127.0.0.1:${port}`, password: 's3cret' });
  const err = await rejectsWith(() => client.ping(), 'CONNECTION');
  assert.ok(!err.message.includes('s3cret'));
  assert.equal(new Client({ url }).url, `redis://:***@127.0.0.1:${port}`);
});

test('an ACL user works with its password, and a wrong password is AUTH without the password', async () => {
  const user = unique('user');
  await redisCommand(redis.url, 'ACL', 'SETUSER', user, 'on', '>g00dpass', '~*', '+@all');
  try {
    const base = new URL(redis.url);
    const good = new CappedQueue(unique('q'), { url: `redis://${user}:g00dpass@${base.host}` });
    assert.equal(await good.push('g', 'x'), 0);
    const viaOptions = new Client({ url: redis.url, username: user, password: 'g00dpass' });
    await viaOptions.ping();

    const bad = new CappedQueue(unique('q'), { url: `redis://${user}:wr0ngpass@${base.host}` });
    const err = await rejectsWith(() => bad.push('g', 'x'), 'AUTH', Error, /refused the username or password/);
    assert.ok(!err.message.includes('wr0ngpass'), err.message);
    const badClient = new Client({ url: redis.url, username: user, password: 'wr0ngpass' });
    const err2 = await rejectsWith(() => badClient.ping(), 'AUTH');
    assert.ok(!err2.message.includes('wr0ngpass'), err2.message);
  } finally {
    await redisCommand(redis.url, 'ACL', 'DELUSER', user);
  }
});

test('a missing or wrong password is AUTH on every call path, never echoing the password', async () => {
  const server = await startRedis(['--requirepass', 's3cret'], { password: 's3cret' });
  try {
    const none = new Queue(unique('q'), { url: server.url });
    for (const call of [() => none.enqueue(Buffer.from('x')), () => none.enqueueMany([{ payload: Buffer.from('x') }, { payload: Buffer.from('y') }]), () => none.stats(), () => none.get('x')]) {
      await rejectsWith(call, 'AUTH', Error, /requires a password/);
    }
    const capped = new CappedQueue(unique('q'), { url: server.url });
    await rejectsWith(() => capped.push('g', 'x'), 'AUTH', Error, /requires a password/);
    const wrongUrl = server.url.replace('redis://', 'redis://:nope@');
    const wrong = new Queue(unique('q'), { url: wrongUrl });
    const err = await rejectsWith(() => wrong.enqueue(Buffer.from('x')), 'AUTH', Error, /refused the username or password/);
    assert.ok(!err.message.includes('nope'), err.message);
    const viaOption = new Client({ url: server.url, password: 'nope' });
    await rejectsWith(() => viaOption.ping(), 'AUTH');
    // The right one works.
    await new Client({ url: server.url, password: 's3cret' }).ping();
  } finally {
    await server.stop();
  }
});

test('a worker or consumer whose password Redis refuses stops by itself: join() rejects with AUTH and error is set', async () => {
  const server = await startRedis(['--requirepass', 's3cret'], { password: 's3cret' });
  try {
    const client = new Client({ url: server.url, password: 'nope' });
    const worker = new Queue(unique('q'), { client }).work(() => {});
    const err = await rejectsWith(() => worker.join(), 'AUTH');
    assert.equal(worker.running, false);
    assert.equal(worker.error.code, 'AUTH');
    assert.equal(worker.error.message, err.message);
    await rejectsWith(() => worker.shutdown(), 'AUTH');
    const consumer = new CappedQueue(unique('q'), { client }).consume(() => {});
    await rejectsWith(() => consumer.join(), 'AUTH');
    assert.equal(consumer.error.code, 'AUTH');
  } finally {
    await server.stop();
  }
});

test('run() rejects with the error its worker or consumer stopped on, and removes its signal listeners', async () => {
  const server = await startRedis(['--requirepass', 's3cret'], { password: 's3cret' });
  const listeners = () => [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
  const before = listeners();
  try {
    const client = new Client({ url: server.url, password: 'nope' });
    const running = new Queue(unique('q'), { client }).run(() => {});
    assert.deepEqual(listeners(), before.map((n) => n + 1));
    await rejectsWith(() => running, 'AUTH');
    assert.deepEqual(listeners(), before);
    await rejectsWith(() => new CappedQueue(unique('q'), { client }).run(() => {}), 'AUTH');
    assert.deepEqual(listeners(), before);
  } finally {
    await server.stop();
  }
});

test('a worker whose Redis user may not run LPOP stops with PERMISSION naming it; a consumer without EVALSHA likewise', async () => {
  const user = unique('limited');
  // Everything a worker needs but LPOP (which the fetch script runs).
  await redisCommand(redis.url, 'ACL', 'SETUSER', user, 'reset', 'on', '>pw', '~*', '+@all', '-lpop');
  const capUser = unique('capped');
  await redisCommand(redis.url, 'ACL', 'SETUSER', capUser, 'reset', 'on', '>pw', '~*', '+@all', '-evalsha');
  try {
    const client = new Client({ url: redis.url, username: user, password: 'pw', prefix: unique('t') });
    const queue = new Queue(unique('q'), { client });
    await queue.enqueue(Buffer.from('x'));
    const worker = queue.work(() => {});
    const err = await rejectsWith(() => worker.join(), 'PERMISSION', Error, /LPOP/i);
    assert.match(err.message, /lpop/i);
    assert.equal(worker.error.code, 'PERMISSION');
    assert.equal((await queue.stats()).ready, 1, 'the job is still there');

    const capped = new CappedQueue(unique('q'), { client: new Client({ url: redis.url, username: capUser, password: 'pw' }) });
    const consumer = capped.consume(() => {});
    await rejectsWith(() => consumer.join(), 'PERMISSION', Error, /evalsha/i);
    assert.equal(consumer.error.code, 'PERMISSION');
  } finally {
    await redisCommand(redis.url, 'ACL', 'DELUSER', user, capUser);
  }
});

test('a full Redis (noeviction at maxmemory) refuses enqueue with OUT_OF_MEMORY while get, deadLetters and stats still work', async () => {
  const server = await startRedis(['--maxmemory-policy', 'noeviction']);
  try {
    const { queue } = freshJobQueue(server.url, { maxAttempts: 1 });
    await queue.enqueueMany([{ payload: Buffer.from('x'), id: 'kept' }, { payload: Buffer.from('x'), id: 'dead' }]);
    await queue.work(() => Promise.reject(new Error('boom')), { concurrency: 1, stopWhenDrained: true, pollIntervalMs: 100, onError: () => {} }).join();
    // Data well past the limit set afterwards: Redis is then over maxmemory for sure.
    const filler = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 64; i++) await redisCommand(server.url, 'SET', `filler${i}`, filler);
    await redisCommand(server.url, 'CONFIG', 'SET', 'maxmemory', '2mb');
    await rejectsWith(() => queue.enqueue(Buffer.from('x')), 'OUT_OF_MEMORY', Error, /out of memory/);
    assert.equal((await queue.get('dead')).state, 'dead');
    assert.equal((await queue.deadLetters()).length, 2);
    assert.equal((await queue.stats()).dead, 2);
  } finally {
    await server.stop();
  }
});

test("evictionCheck: 'refuse' rejects every call on a Redis that may evict keys with EVICTION_POLICY; an unknown value is INVALID_ARGUMENT", async () => {
  const server = await startRedis(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
  try {
    const refusing = new Client({ url: server.url, evictionCheck: 'refuse' });
    await rejectsWith(() => new Queue(unique('q'), { client: refusing }).enqueue(Buffer.from('x')), 'EVICTION_POLICY', Error, /allkeys-lru/);
    await rejectsWith(() => refusing.ping(), 'EVICTION_POLICY');
    for (const evictionCheck of ['warn', 'off']) {
      const client = new Client({ url: server.url, evictionCheck });
      assert.equal((await new Queue(unique('q'), { client }).enqueue(Buffer.from('x'))).created, true, evictionCheck);
    }
  } finally {
    await server.stop();
  }
  await rejectsWith(() => new Client({ evictionCheck: 'ignore' }), 'INVALID_ARGUMENT', Error, /evictionCheck must be 'warn', 'refuse' or 'off'; got "ignore"/);
  await rejectsWith(() => new Client({ evictionCheck: true }), 'INVALID_ARGUMENT', TypeError, /evictionCheck must be a string/);
});

test('names and ids that are not well-formed UTF-16 (lone surrogates) are refused, so two of them never share keys', async () => {
  const names = ['sur\uD800', 'sur\uDBFF'];
  const lone = /not well-formed UTF-16: it holds a lone surrogate/;
  const client = new Client({ url: redis.url, prefix: unique('t') });
  for (const name of names) {
    await rejectsWith(() => new Queue(name, { client }), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => new CappedQueue(name, { client }), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => new Client({ url: redis.url, prefix: name }), 'INVALID_ARGUMENT', Error, lone);
  }
  const { queue, prefix } = freshJobQueue(redis.url);
  const { queue: capped, prefix: cappedPrefix } = freshQueue(redis.url);
  for (const id of names) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { id }), 'INVALID_ARGUMENT', Error, /enqueue options\.id is not well-formed/);
    await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('x'), id }]), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => queue.get(id), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => queue.cancel(id), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => queue.requeue(id), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => capped.push(id, 'x'), 'INVALID_ARGUMENT', Error, /group is not well-formed/);
    await rejectsWith(() => capped.pushMany([[id, 'x']]), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => capped.len(id), 'INVALID_ARGUMENT', Error, lone);
    await rejectsWith(() => capped.consume(() => {}, { groups: ['fine', id] }), 'INVALID_ARGUMENT', Error, /groups\[1\] is not well-formed/);
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
  assert.deepEqual(await keysWithPrefix(redis.url, cappedPrefix), []);
  // A real U+FFFD is a character like any other.
  assert.equal((await queue.enqueue(Buffer.from('x'), { id: 'fine\uFFFD' })).created, true);
  assert.equal((await queue.get('fine\uFFFD')).id, 'fine\uFFFD');
  // A well-formed pair (an astral character) is fine too.
  assert.equal((await queue.enqueue(Buffer.from('x'), { id: 'rocket-\uD83D\uDE80' })).created, true);
});

test('count options say what they take: at least 1 where 0 is refused, 0 or more where it is allowed', async () => {
  const client = new Client({ url: redis.url });
  await rejectsWith(() => new Queue(unique('q'), { client, maxAttempts: -1 }), 'INVALID_ARGUMENT', Error, /maxAttempts must be a whole number of at least 1; got -1/);
  await rejectsWith(() => new Queue(unique('q'), { client, maxAttempts: 0 }), 'INVALID_ARGUMENT', Error, /at least 1/);
  await rejectsWith(() => new Queue(unique('q'), { client, maxAttempts: 1.5 }), 'INVALID_ARGUMENT', Error, /maxAttempts must be a whole number of at least 1; got 1.5/);
  await rejectsWith(() => new Queue(unique('q'), { client, keepCompleted: -1 }), 'INVALID_ARGUMENT', Error, /keepCompleted must be a whole number, 0 or more; got -1/);
  assert.equal(new Queue(unique('q'), { client, keepCompleted: 0 }).keepCompleted, 0);
  const { queue } = freshJobQueue(redis.url);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { maxAttempts: -1 }), 'INVALID_ARGUMENT', Error, /maxAttempts must be a whole number of at least 1/);
  await rejectsWith(() => queue.work(() => {}, { concurrency: -2 }), 'INVALID_ARGUMENT', Error, /concurrency must be a whole number of at least 1; got -2/);
  await rejectsWith(() => queue.deadLetters({ limit: -1 }), 'INVALID_ARGUMENT', Error, /limit must be a whole number, 0 or more/);
  await rejectsWith(() => new CappedQueue(unique('q'), { client, capacity: -1 }), 'INVALID_ARGUMENT', Error, /capacity must be a whole number of at least 1/);
});

test("a rejected call's error carries the stack of the code that made the call", async () => {
  const port = await freePort();
  const queue = new Queue(unique('q'), { url: `redis://127.0.0.1:${port}` });
  async function enqueueSomething() {
    return queue.enqueue(Buffer.from('x'));
  }
  const err = await rejectsWith(() => enqueueSomething(), 'CONNECTION');
  assert.match(err.stack, /^Error: /);
  assert.ok(err.stack.startsWith(`Error: ${err.message}\n`), err.stack);
  assert.match(err.stack, /at enqueueSomething \(.*errors\.test\.mjs:\d+:\d+\)/);
  // Argument errors reject the same way.
  const typeErr = await rejectsWith(() => queue.enqueue(42), 'INVALID_ARGUMENT', TypeError);
  assert.match(typeErr.stack, /^TypeError: enqueue\(payload, options\) takes raw bytes/);
  assert.match(typeErr.stack, /errors\.test\.mjs/);
  // And so does a worker stopping on an error.
  const server = await startRedis(['--requirepass', 's3cret'], { password: 's3cret' });
  try {
    const worker = new Queue(unique('q'), { url: server.url }).work(() => {});
    const joinErr = await rejectsWith(() => worker.join(), 'AUTH');
    assert.match(joinErr.stack, /errors\.test\.mjs/);
  } finally {
    await server.stop();
  }
});
