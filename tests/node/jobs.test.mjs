// The job queue through the Node binding, against a real redis-server: enqueue (idempotent ids,
// bulk, delays by Redis time), get, cancel, retries and dead letters, stats, bad input, an
// unreachable Redis, and the shared envelope vectors. Mirrors core/tests/jobs.rs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  ROOT,
  freePort,
  freshJobQueue,
  keysWithPrefix,
  redisCommand,
  redisTime,
  redisTimeSync,
  rejectsWith,
  tideq,
  unique,
  useRedis,
  waitFor,
} from './harness.mjs';

const redis = useRedis();
const { Queue, decodeEnvelope, encodeEnvelope } = tideq;
const fast = { backoff: { type: 'fixed', delayMs: 50 } };
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

test('enqueue resolves with the id, get reads the job back, and an existing id creates nothing', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  const before = await redisTime(redis.url);
  assert.deepEqual(await queue.enqueue(Buffer.from('one'), { id: 'order-1' }), { id: 'order-1', created: true });
  assert.deepEqual(await queue.enqueue(Buffer.from('two'), { id: 'order-1' }), { id: 'order-1', created: false });
  const info = await queue.get('order-1');
  assert.ok(Buffer.isBuffer(info.payload));
  assert.equal(info.payload.toString(), 'one', 'the second enqueue overwrote the job');
  assert.deepEqual({ ...info, payload: null }, {
    id: 'order-1',
    state: 'ready',
    payload: null,
    task: null,
    attempts: 0,
    maxAttempts: 5,
    lastError: null,
    enqueuedAt: info.enqueuedAt,
    stateSinceOrUntil: null,
    priority: null,
    group: null,
    cost: 1,
    unreadable: null,
    result: null,
    resultBytes: null,
    progress: null,
    progressBytes: null,
    parent: null,
    parents: [],
    childrenPending: null,
    startedAt: null,
    runMs: null,
    worker: null,
    attemptHistory: [],
    logs: [],
  });
  assert.ok(info.enqueuedAt >= before && info.enqueuedAt <= (await redisTime(redis.url)), 'enqueuedAt is Redis time');
  const random = await queue.enqueue(new Uint8Array([0, 255]));
  assert.ok(random.created);
  assert.match(random.id, /^[0-9a-f]{32}$/);
  assert.deepEqual([...(await queue.get(random.id)).payload], [0, 255]);
  assert.equal(await queue.get('no-such-job'), null);
  const s = await queue.stats();
  assert.equal(s.ready, 2);
  assert.equal(s.enqueued, 2);
});

test('enqueueMany writes every job in one call, is idempotent per id, and keeps FIFO order', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  const jobs = Array.from({ length: 1200 }, (_, i) => ({ payload: Buffer.from(String(i)), id: `j${i % 1100}` }));
  const res = await queue.enqueueMany(jobs);
  assert.equal(res.length, 1200);
  assert.equal(res.filter((r) => r.created).length, 1100);
  assert.ok(res.slice(1100).every((r) => !r.created));
  assert.deepEqual(res[7], { id: 'j7', created: true });
  assert.deepEqual(await queue.enqueueMany([]), []);
  // Per-job options apply to each job.
  const [later] = await queue.enqueueMany([{ payload: Buffer.from('later'), id: 'later', delayMs: 60_000, maxAttempts: 2 }]);
  assert.ok(later.created);
  const info = await queue.get('later');
  assert.equal(info.state, 'delayed');
  assert.equal(info.maxAttempts, 2);
  await queue.cancel('later');
  const order = [];
  const worker = queue.work((job) => order.push(Number(job.text())), { concurrency: 1, ...drained });
  await worker.join();
  assert.deepEqual(order, Array.from({ length: 1100 }, (_, i) => i), 'FIFO');
});

test('enqueueMany takes { payload } alone as its bare payload, and leaves the array given as it is', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  const payload = Buffer.from('p');
  const inherited = Object.assign(Object.create({ delayMs: 60_000 }), { payload });
  const jobs = [{ payload }, payload, { payload, id: 'named' }, { payload: new Uint8Array([7]) }, inherited];
  const copy = [...jobs];
  const res = await queue.enqueueMany(jobs);
  assert.deepEqual(jobs, copy, 'the array given is unchanged');
  assert.ok(jobs[0] !== payload && jobs[0].payload === payload);
  assert.equal(res[2].id, 'named');
  const info = await Promise.all(res.map((r) => queue.get(r.id)));
  assert.deepEqual(info.map((j) => j.state), ['ready', 'ready', 'ready', 'ready', 'delayed']);
  assert.deepEqual(info.map((j) => Buffer.from(j.payload).toString('hex')), ['70', '70', '70', '07', '70']);
  // A payload that is not bytes still meets the addon's check, nothing written.
  await rejectsWith(() => queue.enqueueMany([{ payload }, { payload: 'text' }]), 'INVALID_ARGUMENT', TypeError, /jobs\[1\]\.payload/);
  assert.equal((await queue.stats()).enqueued, 5);
});

test('a delayed job never runs before its due time by Redis time (delayMs, runAt as Date or epoch ms)', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  const base = await redisTime(redis.url);
  const jobs = [];
  for (let i = 0; i < 12; i++) {
    const due = base + 400 + (i % 6) * 40;
    jobs.push({ payload: Buffer.from(String(due)), id: `at${i}`, runAt: i % 2 ? new Date(due) : due });
  }
  await queue.enqueueMany(jobs);
  for (let i = 0; i < 6; i++) {
    await queue.enqueue(Buffer.from('delay'), { id: `in${i}`, delayMs: 300 + i * 40 });
    const info = await queue.get(`in${i}`);
    assert.equal(info.state, 'delayed');
    assert.ok(info.stateSinceOrUntil >= base + 300 + i * 40, 'due time is computed from Redis time');
  }
  const dueOf = new Map();
  for (let i = 0; i < 6; i++) dueOf.set(`in${i}`, (await queue.get(`in${i}`)).stateSinceOrUntil);
  const seen = [];
  const worker = queue.work(
    (job) => {
      const ran = redisTimeSync(redis.url);
      const due = job.id.startsWith('at') ? Number(job.text()) : dueOf.get(job.id);
      seen.push({ id: job.id, due, ran });
    },
    { concurrency: 4, ...drained },
  );
  await worker.join();
  assert.equal(seen.length, 18);
  assert.equal(new Set(seen.map((s) => s.id)).size, 18, 'a delayed job ran twice');
  for (const { id, due, ran } of seen) assert.ok(ran >= due, `${id} ran ${due - ran} ms early`);
});

test('cancel removes a delayed or a ready job', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('r'), { id: 'ready' });
  await queue.enqueue(Buffer.from('d'), { id: 'delayed', delayMs: 60_000 });
  await queue.cancel('ready');
  await queue.cancel('delayed');
  assert.equal(await queue.get('ready'), null);
  assert.equal(await queue.get('delayed'), null);
  const s = await queue.stats();
  assert.deepEqual([s.ready, s.delayed, s.cancelled], [0, 0, 2]);
});

test('cancel of a completed job rejects with JOB_NOT_CANCELLABLE (a running one is asked to stop: worker.test.mjs)', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('a'), { id: 'busy' });
  const worker = queue.work(async () => {});
  await waitFor(() => worker.stats().completed === 1, 'the job to complete');
  await rejectsWith(() => queue.cancel('busy'), 'JOB_NOT_CANCELLABLE', Error, /completed/);
  await worker.shutdown();
});

test('cancel of an unknown id rejects with JOB_NOT_FOUND', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await rejectsWith(() => queue.cancel('nope'), 'JOB_NOT_FOUND', Error, /nope/);
  await rejectsWith(() => queue.requeue('nope'), 'JOB_NOT_FOUND');
});

test('a failing job is retried, then dead-lettered after exactly maxAttempts with the last error', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueue(Buffer.from('x'), { id: 'flaky', maxAttempts: 3 });
  const attempts = [];
  const reported = [];
  const worker = queue.work(
    (job) => {
      attempts.push(job.attempt);
      throw new RangeError(`boom ${job.attempt}`);
    },
    { ...drained, onError: (err, job) => reported.push([err, job.id, job.attempt]) },
  );
  const stats = await worker.join();
  assert.deepEqual(attempts, [1, 2, 3]);
  assert.equal(stats.failed, 3);
  assert.equal(stats.completed, 0);
  const info = await queue.get('flaky');
  assert.equal(info.state, 'dead');
  assert.equal(info.attempts, 3);
  assert.equal(info.lastError, 'RangeError: boom 3');
  assert.ok(info.stateSinceOrUntil > 0, 'time of death');
  assert.deepEqual(reported.map(([, id, a]) => [id, a]), [['flaky', 1], ['flaky', 2], ['flaky', 3]]);
  assert.ok(reported[0][0] instanceof RangeError, 'onError gets the error object the handler threw');
  const s = await queue.stats();
  assert.deepEqual([s.dead, s.deadLettered, s.retried], [1, 1, 2]);
});

test('dead letters can be listed (paged), requeued one by one or all, and purged', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  for (let i = 0; i < 5; i++) await queue.enqueue(Buffer.from(String(i)), { id: `bad${i}`, maxAttempts: 1 });
  const failing = (message) => () => Promise.reject(new Error(message));
  await queue.work(failing('nope'), { ...drained, onError: () => {} }).join();
  const dead = await queue.deadLetters();
  assert.deepEqual(dead.map((j) => j.id).sort(), ['bad0', 'bad1', 'bad2', 'bad3', 'bad4']);
  assert.ok(dead.every((j) => j.state === 'dead' && j.lastError === 'Error: nope' && j.attempts === 1));
  assert.equal((await queue.deadLetters({ offset: 3, limit: 10 })).length, 2, 'paged');
  assert.equal((await queue.deadLetters({ limit: 2 })).length, 2);
  await queue.requeue('bad0');
  await rejectsWith(() => queue.requeue('bad0'), 'JOB_NOT_FOUND');
  const info = await queue.get('bad0');
  assert.deepEqual([info.state, info.attempts], ['ready', 0]);
  assert.equal(await queue.requeueAll(), 4);
  await queue.work(failing('still bad'), { ...drained, onError: () => {} }).join();
  assert.equal((await queue.deadLetters())[0].lastError, 'Error: still bad');
  assert.equal(await queue.purge(), 5);
  const s = await queue.stats();
  assert.deepEqual([s.dead, s.ready, s.delayed, s.active], [0, 0, 0, 0]);
  assert.deepEqual(await queue.deadLetters(), []);
  const jobsKey = (await keysWithPrefix(redis.url, prefix)).filter((k) => k.endsWith(':jobs'));
  assert.deepEqual(jobsKey, [], 'purged jobs are deleted');
});

test('stats count jobs per state and the lifetime counters', async () => {
  const { queue } = freshJobQueue(redis.url, fast);
  await queue.enqueueMany([
    { payload: Buffer.from('ok'), id: 'ok1' },
    { payload: Buffer.from('ok'), id: 'ok2' },
    { payload: Buffer.from('bad'), id: 'bad', maxAttempts: 2 },
    { payload: Buffer.from('later'), id: 'later', delayMs: 60_000 },
    { payload: Buffer.from('gone'), id: 'gone' },
  ]);
  await queue.cancel('gone');
  const { latencyMs, ...counts } = await queue.stats();
  assert.ok(latencyMs >= 0 && latencyMs < 60_000, `latencyMs ${latencyMs}`);
  assert.deepEqual(counts, {
    delayed: 1,
    ready: 3,
    active: 0,
    dead: 0,
    enqueued: 5,
    completed: 0,
    deadLettered: 0,
    retried: 0,
    recovered: 0,
    cancelled: 1,
    snoozed: 0,
    expired: 0,
    deadTrimmed: 0,
    lost: 0,
    paused: false,
    completedKept: 0,
    waiting: 0,
  });
  await queue.cancel('later'); // a delayed job would keep a stopWhenDrained worker waiting
  const worker = queue.work(
    (job) => {
      if (job.text() === 'bad') throw new Error('bad');
    },
    { ...drained, onError: () => {} },
  );
  assert.deepEqual(await worker.join(), { completed: 2, failed: 2, leaseLost: 0, released: 0, fetchErrors: 0, cancelled: 0, snoozed: 0 });
  const s = await queue.stats();
  assert.deepEqual(s, {
    delayed: 0,
    ready: 0,
    active: 0,
    dead: 1,
    enqueued: 5,
    completed: 2,
    deadLettered: 1,
    retried: 1,
    recovered: 0,
    cancelled: 2,
    snoozed: 0,
    expired: 0,
    deadTrimmed: 0,
    lost: 0,
    paused: false,
    latencyMs: 0,
    completedKept: 2,
    waiting: 0,
  });
});

test('keepDead bounds the dead letters: the oldest beyond it are deleted and counted in stats().deadTrimmed', async () => {
  const { queue } = freshJobQueue(redis.url, { ...fast, maxAttempts: 1, keepDead: 2 });
  const ids = ['d0', 'd1', 'd2', 'd3', 'd4'];
  for (const id of ids) {
    // One at a time, so the deaths happen in this order.
    await queue.enqueue(Buffer.from(id), { id });
    await queue.work(() => Promise.reject(new Error('boom')), { ...drained, onError: () => {} }).join();
  }
  const dead = await queue.deadLetters();
  assert.deepEqual(dead.map((j) => j.id), ['d3', 'd4'], 'the newest two are kept, oldest death first');
  assert.equal(await queue.get('d0'), null, 'a trimmed dead job is gone');
  const s = await queue.stats();
  assert.deepEqual([s.dead, s.deadTrimmed, s.deadLettered, s.lost], [2, 3, 5, 0]);
});

test('an id whose job completed and was trimmed (keepCompleted: 0) creates nothing within the idempotency window, and is created again with idempotencyWindowMs: null', async () => {
  for (const [options, createdAgain] of [[{}, false], [{ idempotencyWindowMs: null }, true]]) {
    const { queue } = freshJobQueue(redis.url, { ...fast, keepCompleted: 0, ...options });
    assert.equal((await queue.enqueue(Buffer.from('first'), { id: 'once' })).created, true);
    const ran = [];
    await queue.work((job) => void ran.push(job.text()), drained).join();
    assert.deepEqual(ran, ['first']);
    assert.equal(await queue.get('once'), null, 'keepCompleted: 0 deletes the completed job');
    const again = await queue.enqueue(Buffer.from('second'), { id: 'once' });
    assert.deepEqual(again, { id: 'once', created: createdAgain }, JSON.stringify(options));
    assert.equal((await queue.stats()).ready, createdAgain ? 1 : 0);
  }
});

test('a hand-damaged job record is dead-lettered and listed with unreadable set, its raw bytes as payload; the healthy jobs run', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, fast);
  await queue.enqueueMany([
    { payload: Buffer.from('ok'), id: 'fine' },
    { payload: Buffer.from('x'), id: 'broken' },
  ]);
  const garbage = Buffer.from([0x92, 0x01, 0x02]); // MessagePack, but not an envelope
  await redisCommand(redis.url, 'HSET', `${prefix}:{${queue.name}}:jobs`, 'broken', garbage);
  const handled = [];
  const stats = await queue.work((job) => void handled.push(job.id), drained).join();
  assert.deepEqual(handled, ['fine'], 'the damaged job never reaches a handler');
  assert.equal(stats.completed, 1);
  const dead = await queue.deadLetters();
  assert.equal(dead.length, 1);
  const [broken] = dead;
  assert.equal(broken.id, 'broken');
  assert.equal(broken.state, 'dead');
  assert.match(broken.unreadable, /envelope/);
  assert.match(broken.lastError, /unreadable/);
  assert.deepEqual([...broken.payload], [...garbage], 'the raw stored bytes');
  assert.match((await queue.get('broken')).unreadable, /envelope/);
  assert.equal((await queue.get('fine')).unreadable, null);
  const s = await queue.stats();
  assert.deepEqual([s.dead, s.completed, s.lost], [1, 1, 0]);
});

test('bad job input is refused with INVALID_ARGUMENT and nothing is written', async () => {
  const { queue, prefix, client } = freshJobQueue(redis.url);
  const bad = [
    [{ delayMs: -1 }, /delayMs/],
    [{ maxAttempts: 0 }, /max_attempts/],
    [{ maxAttempts: 1.5 }, /maxAttempts/],
    [{ delayMs: 1000, runAt: Date.now() + 1000 }, /delay or run_at/],
    [{ runAt: new Date(NaN) }, /runAt/],
    [{ runAt: -5 }, /runAt/],
    [{ timeoutMs: 0 }, /timeout/],
    [{ backoff: { type: 'linear' } }, /backoff.type/],
    [{ backoff: { type: 'fixed' } }, /delayMs is required/],
    [{ backoff: { type: 'exponential', baseMs: 1000, maxMs: 10 } }, /max_ms/],
    [{ backoff: { type: 'fixed', delayMs: 10, jitter: true } }, /jitter/],
    [{ delay: 5 }, /unknown option "delay"/],
  ];
  for (const [opts, message] of bad) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), opts), 'INVALID_ARGUMENT', Error, message);
    await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from("fine"), id: "fine" }, { payload: Buffer.from("x"), ...opts }]), "INVALID_ARGUMENT");
  }
  for (const id of ['', 'tab\there', 'nl\n', 'x'.repeat(257)]) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { id }), 'INVALID_ARGUMENT', Error, /job id/);
    await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('ok') }, { payload: Buffer.from('x'), id }]), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.get(id), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.cancel(id), 'INVALID_ARGUMENT');
    await rejectsWith(() => queue.requeue(id), 'INVALID_ARGUMENT');
  }
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { id: 'é'.repeat(129) }), 'INVALID_ARGUMENT', Error, /256 bytes/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { id: 42 }), 'INVALID_ARGUMENT', TypeError, /id must be a string/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { delayMs: '10' }), 'INVALID_ARGUMENT', TypeError, /delayMs must be a number/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { runAt: '2030-01-01' }), 'INVALID_ARGUMENT', TypeError, /runAt must be a Date/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), 'opts'), 'INVALID_ARGUMENT', TypeError, /must be an object/);
  await rejectsWith(() => queue.enqueueMany('x'), 'INVALID_ARGUMENT', TypeError, /jobs must be an array/);
  await rejectsWith(() => queue.enqueueMany(['x']), 'INVALID_ARGUMENT', TypeError, /jobs\[0\] must be an object/);
  await rejectsWith(() => queue.enqueueMany([{ id: 'no-payload' }]), 'INVALID_ARGUMENT', TypeError, /needs name \(a task, with its data\) or payload \(raw bytes\)/);
  await rejectsWith(() => queue.enqueueMany([{ name: 't', payload: Buffer.from('x') }]), 'INVALID_ARGUMENT', Error, /both name \(a task\) and payload/);
  await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('x'), data: 1 }]), 'INVALID_ARGUMENT', Error, /data goes with a task name/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), { format: 'json' }), 'INVALID_ARGUMENT', Error, /format applies to tasks/);
  await rejectsWith(() => queue.enqueueTask('t', {}, { format: 'xml' }), 'INVALID_ARGUMENT', Error, /format must be 'json' or 'msgpack'/);
  await rejectsWith(() => queue.enqueueTask('', {}), 'INVALID_ARGUMENT', Error, /task name/);
  await rejectsWith(() => queue.enqueueTask('t', 1n), 'INVALID_ARGUMENT', TypeError, /BigInt/);
  // Queue and worker options.
  const url = redis.url;
  await rejectsWith(() => new Queue('', { client }), 'INVALID_ARGUMENT', Error, /queue name/);
  await rejectsWith(() => new Queue('a{b}', { client }), 'INVALID_ARGUMENT');
  await rejectsWith(() => new Queue(unique('q'), { client, maxAttempts: 0 }), 'INVALID_ARGUMENT', Error, /max_attempts/);
  await rejectsWith(() => new Queue(unique('q'), { client, timeoutMs: 0 }), 'INVALID_ARGUMENT', Error, /timeout/);
  await rejectsWith(() => new Queue(unique('q'), { client, max_attempts: 3 }), 'INVALID_ARGUMENT', Error, /unknown option "max_attempts"/);
  await rejectsWith(() => new Queue(unique('q'), { client, url }), 'INVALID_ARGUMENT', Error, /either client or url/);
  await rejectsWith(() => new Queue(unique('q'), { client, backoff: 'fast' }), 'INVALID_ARGUMENT', TypeError, /backoff must be an object/);
  await rejectsWith(() => queue.work(() => {}, { concurrency: 0 }), 'INVALID_ARGUMENT', Error, /concurrency/);
  await rejectsWith(() => queue.work(() => {}, { leaseMs: 10 }), 'INVALID_ARGUMENT', Error, /lease/);
  await rejectsWith(() => queue.work(() => {}, { lease_ms: 1000 }), 'INVALID_ARGUMENT', Error, /unknown option "lease_ms"/);
  await rejectsWith(() => queue.work('handler'), 'INVALID_ARGUMENT', TypeError, /handler must be a function/);
  await rejectsWith(() => queue.work({ 'send-email': 'not a function' }), 'INVALID_ARGUMENT', TypeError, /handlers\["send-email"\] must be a function/);
  await rejectsWith(() => queue.work({}), 'INVALID_ARGUMENT', Error, /at least one task/);
  await rejectsWith(() => queue.work(() => {}, { onError: 1 }), 'INVALID_ARGUMENT', TypeError, /onError must be a function/);
  await rejectsWith(() => queue.deadLetters({ limit: -1 }), 'INVALID_ARGUMENT');
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'bad input wrote to Redis');
});

test('a payload that is not bytes (number, object, array, null) is a TypeError and nothing is written', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  for (const payload of [42, { a: 1 }, [1, 2], null, undefined, true]) {
    await rejectsWith(() => queue.enqueue(payload), 'INVALID_ARGUMENT', TypeError, /enqueue\(payload, options\) takes raw bytes \(a Buffer or Uint8Array\)/);
  }
  for (const name of [42, Buffer.from('t'), null]) {
    await rejectsWith(() => queue.enqueueTask(name, {}), 'INVALID_ARGUMENT', TypeError, /enqueueTask\(name, data, options\) takes the task's name \(a string\) first/);
  }
  await rejectsWith(() => queue.enqueue(new Float32Array(2)), 'INVALID_ARGUMENT', TypeError, /payload must be a Buffer or Uint8Array/);
  await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('ok') }, { payload: 7 }]), 'INVALID_ARGUMENT', TypeError, /jobs\[1\]\.payload/);
  // A raw payload is bytes: text goes through Buffer.from (a string is a task name).
  await rejectsWith(() => queue.enqueueMany([{ payload: 'text' }]), 'INVALID_ARGUMENT', TypeError, /jobs\[0\]\.payload must be a Buffer or Uint8Array \(raw bytes; for text, Buffer.from\(text\)\)/);
  await rejectsWith(() => queue.enqueue(Buffer.from('x'), {}, {}), 'INVALID_ARGUMENT', TypeError, /takes two arguments/);
  const p = queue.enqueue(42);
  assert.ok(p instanceof Promise, 'async methods reject rather than throw');
  await assert.rejects(p, { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});

test('enqueue of a string with options is refused, naming enqueueTask, instead of silently becoming a task with the options as its data', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  // What a producer that passed text payloads before tasks existed would write.
  const err = await rejectsWith(
    () => queue.enqueue('hello', { id: 'order-1', delayMs: 5000 }),
    'INVALID_ARGUMENT',
    TypeError,
    /takes raw bytes .*Buffer\.from\(text\).*not a string: to enqueue task "hello", call enqueueTask\("hello", data, options\)/,
  );
  assert.ok(!/order-1/.test(err.message));
  // A string alone, and the old three-argument task call, are refused the same way.
  await rejectsWith(() => queue.enqueue('hello'), 'INVALID_ARGUMENT', TypeError, /enqueueTask\("hello"/);
  await rejectsWith(() => queue.enqueue('send-email', { to: 'ada' }, { id: 'x' }), 'INVALID_ARGUMENT', TypeError, /enqueueTask\("send-email"/);
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'a refused enqueue wrote to Redis');
  assert.equal((await queue.stats()).ready, 0);
  // Each meaning has its call: the payload with its id and delay, and a task with its data.
  const raw = await queue.enqueue(Buffer.from('hello'), { id: 'order-1', delayMs: 5000 });
  assert.deepEqual(raw, { id: 'order-1', created: true });
  const job = await queue.get('order-1');
  assert.equal(job.state, 'delayed');
  assert.equal(job.payload.toString(), 'hello');
  const task = await queue.enqueueTask('hello', { id: 'order-2', delayMs: 5000 });
  assert.notEqual(task.id, 'order-2', 'the data of a task is not its options');
  assert.equal((await queue.get(task.id)).state, 'ready');
  const [leased] = await queue.leaseJobs(10);
  assert.deepEqual([leased.id, leased.task, leased.data], [task.id, 'hello', { id: 'order-2', delayMs: 5000 }]);
  await queue.complete(leased);
});

test('a payload over maxPayload is refused with PAYLOAD_TOO_LARGE and nothing is written', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, {}, { maxPayload: 1024 });
  await rejectsWith(() => queue.enqueue(Buffer.alloc(1025)), 'PAYLOAD_TOO_LARGE', Error, /1025 bytes.*maxPayload in Node/);
  await rejectsWith(() => queue.enqueueMany([{ payload: Buffer.from('small') }, { payload: Buffer.from('x'.repeat(2000)) }]), 'PAYLOAD_TOO_LARGE');
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
  assert.ok((await queue.enqueue(Buffer.alloc(1024))).created, 'exactly the limit is accepted');
});

test('enqueue with Redis unreachable rejects with CONNECTION, without the password', async () => {
  const port = await freePort();
  const queue = new Queue(unique('q'), { url: `redis://:s3cret@127.0.0.1:${port}` });
  for (const call of [() => queue.enqueue(Buffer.from('x')), () => queue.enqueueMany([{ payload: Buffer.from('x') }]), () => queue.get('a'), () => queue.stats()]) {
    const err = await rejectsWith(call, 'CONNECTION');
    assert.ok(!err.message.includes('s3cret'), err.message);
  }
});

test('every shared envelope vector decodes to its fields and encodes back to the same bytes (a trace context too); one with unknown fields decodes to the fields it knows', () => {
  const { vectors, readers_ignore_unknown_fields } = JSON.parse(readFileSync(join(ROOT, 'tests/vectors/envelope_v1.json'), 'utf8'));
  assert.ok(vectors.length >= 3);
  const expectedOf = (v) => {
    const { payload_hex, ...fields } = v.fields;
    return { ...fields, payload: Buffer.from(payload_hex, 'hex') };
  };
  const plain = (e) => ({ ...e, payload: [...e.payload] });
  for (const v of vectors) {
    const expected = expectedOf(v);
    const decoded = decodeEnvelope(Buffer.from(v.hex, 'hex'));
    assert.deepEqual(plain(decoded), plain(expected), v.name);
    assert.ok(Buffer.isBuffer(decoded.payload));
    assert.equal(encodeEnvelope(expected).toString('hex'), v.hex, v.name);
    assert.equal(encodeEnvelope(decoded).toString('hex'), v.hex, v.name);
  }
  // The trace context (a plain object of strings) round-trips.
  const traced = vectors.find((v) => v.name === 'traced');
  assert.ok(traced, 'the traced vector');
  const decodedTrace = decodeEnvelope(Buffer.from(traced.hex, 'hex')).trace;
  assert.equal(Object.getPrototypeOf(decodedTrace), Object.prototype);
  assert.deepEqual(decodedTrace, traced.fields.trace);
  // Decode-only: envelopes of a later version with fields this one does not know decode to the
  // fields it knows.
  assert.ok(readers_ignore_unknown_fields.vectors.length >= 1);
  for (const v of readers_ignore_unknown_fields.vectors) {
    assert.deepEqual(plain(decodeEnvelope(Buffer.from(v.hex, 'hex'))), plain(expectedOf(v)), v.name);
  }
  assert.throws(() => decodeEnvelope(Buffer.from('not msgpack')), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => decodeEnvelope(42), { code: 'INVALID_ARGUMENT', name: 'TypeError' });
  assert.throws(() => encodeEnvelope({ v: 1 }), { code: 'INVALID_ARGUMENT' });
});
