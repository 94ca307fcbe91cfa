// Results, progress and wait through the Node binding, against a real redis-server: what a
// handler returns (JSON, Buffers raw) and reports is read back by get; wait answers for jobs
// finished before the call and wakes at once for later ones. Mirrors core/tests/results_*.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, redisCommand, rejectsWith, sleep, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 50 };

async function drain(queue, handler) {
  await queue.work(handler, drained).join();
}

test('a handler return value is stored with the job and read by get', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const id of ['obj', 'buf', 'none', 'nul']) await queue.enqueue(Buffer.from(id), { id });
  await drain(queue, async (job) => ({ obj: { sent: 3 }, buf: Buffer.from([0, 255]), none: undefined, nul: null })[job.id]);
  const obj = await queue.get('obj');
  assert.equal(obj.state, 'completed');
  assert.deepEqual(obj.result, { sent: 3 });
  assert.equal(obj.resultBytes.toString(), '{"sent":3}');
  const buf = await queue.get('buf');
  assert.ok(Buffer.isBuffer(buf.result));
  assert.deepEqual([...buf.result], [0, 255]);
  assert.equal((await queue.get('none')).result, null);
  assert.equal((await queue.get('nul')).resultBytes, null);
});

test('a return value with no JSON form, or over maxResultLen, fails the attempt', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1, maxResultLen: 8 });
  await queue.enqueue(Buffer.from(''), { id: 'big' });
  await queue.enqueue(Buffer.from(''), { id: 'fn' });
  let refused;
  await drain(queue, async (job) => {
    if (job.id === 'fn') return () => 1;
    refused = await job.progress('x'.repeat(20)).catch((e) => e.code);
    return Buffer.alloc(9);
  });
  const big = await queue.get('big');
  assert.equal(big.state, 'dead');
  assert.match(big.lastError, /max_result_len is 8/);
  assert.equal(refused, 'PAYLOAD_TOO_LARGE');
  const fn = await queue.get('fn');
  assert.equal(fn.state, 'dead');
  assert.match(fn.lastError, /TypeError: the handler's return value/);
});

test('progress is visible while the job runs', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from(''), { id: 'p' });
  let reported = false;
  let finish;
  const done = new Promise((r) => (finish = r));
  const worker = queue.work(async (job) => {
    await job.progress({ pct: 50 });
    reported = true;
    await done;
    return 'ok';
  }, drained);
  await waitFor(() => reported, 'the progress');
  const info = await queue.get('p');
  assert.equal(info.state, 'active');
  assert.deepEqual(info.progress, { pct: 50 });
  assert.equal(info.progressBytes.toString(), '{"pct":50}');
  finish();
  await worker.join();
  assert.equal(await queue.wait('p'), 'ok');
});

test('results and progress go with trimmed and purged jobs', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, { keepCompleted: 1, maxAttempts: 1 });
  for (let i = 0; i < 3; i++) await queue.enqueue(Buffer.from(''), { id: `j${i}` });
  await drain(queue, async (job) => {
    await job.progress(1);
    return [job.id];
  });
  const hlen = (kind) => redisCommand(redis.url, 'HLEN', `${prefix}:{${queue.name}}:${kind}`);
  assert.equal(await hlen('results'), 1);
  assert.equal(await hlen('progress'), 1);
  await queue.enqueue(Buffer.from(''), { id: 'dies' });
  await drain(queue, async (job) => {
    await job.progress('almost');
    throw new Error('no');
  });
  assert.equal(await hlen('progress'), 2);
  assert.equal(await queue.purge(), 1);
  assert.equal(await hlen('progress'), 1);
});

test('wait answers for a job that finished before the call, and promptly for a later one', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from(''), { id: 'early' });
  await drain(queue, async () => ({ answer: 42 }));
  assert.deepEqual(await queue.wait('early'), { answer: 42 });

  await queue.enqueue(Buffer.from(''), { id: 'later' });
  let finishedAt;
  const waited = queue.wait('later', { timeoutMs: 20_000 }).then((r) => [r, Date.now()]);
  await sleep(300);
  await drain(queue, async () => {
    finishedAt = Date.now();
    return 'later done';
  });
  const [result, at] = await waited;
  assert.equal(result, 'later done');
  assert.ok(at - finishedAt < 500, `woke ${at - finishedAt} ms after the job finished`);
});

test('wait on a dead-lettered job rejects with its error; timeouts and unknown ids reject too', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1 });
  await queue.enqueue(Buffer.from(''), { id: 'dies' });
  await drain(queue, async () => {
    throw new TypeError('smtp refused');
  });
  await rejectsWith(() => queue.wait('dies'), 'JOB_FAILED', Error, /TypeError: smtp refused/);
  await rejectsWith(() => queue.wait('nobody'), 'JOB_NOT_FOUND');
  await queue.enqueue(Buffer.from(''), { id: 'slow' });
  const t = Date.now();
  await rejectsWith(() => queue.wait('slow', { timeoutMs: 300 }), 'TIMEOUT');
  assert.ok(Date.now() - t >= 290);
  await rejectsWith(() => queue.wait('slow', { timeout: 1 }), 'INVALID_ARGUMENT');
});

test('progress after the lease was lost rejects with LEASE_LOST', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from(''), { id: 'x' });
  const [job] = await queue.leaseJobs(1, { leaseMs: 50 });
  await sleep(150);
  const [again] = await queue.leaseJobs(1, { leaseMs: 30_000 });
  await rejectsWith(() => job.progress('late'), 'LEASE_LOST');
  await again.progress('current');
  assert.equal((await queue.get('x')).progress, 'current');
});

test('task handlers return values are results', async () => {
  const { queue } = freshJobQueue(redis.url);
  const { id } = await queue.enqueueTask('add', { a: 2, b: 3 });
  await queue.work({ add: async ({ a, b }) => a + b }, drained).join();
  assert.equal(await queue.wait(id), 5);
});

/** `connected_clients` of the test's Redis. */
async function connections(url) {
  const info = String(await redisCommand(url, 'INFO', 'clients'));
  return Number(/connected_clients:(\d+)/.exec(info)[1]);
}

test('2,000 concurrent waits share one connection and each gets its own job\'s result', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const jobs = [];
  for (let i = 0; i < 2000; i++) jobs.push({ payload: Buffer.from(`r${i}`), id: `w${i}` });
  await queue.enqueueMany(jobs);
  const before = await connections(redis.url);
  const waits = jobs.map((j) => queue.wait(j.id, { timeoutMs: 60_000 }));
  const waitersKey = `${prefix}:{${queue.name}}:waiters`;
  const deadline = Date.now() + 30_000;
  while (Number(await redisCommand(redis.url, 'HLEN', waitersKey)) < 2000) {
    assert.ok(Date.now() < deadline, 'the waits did not register');
    await sleep(50);
  }
  const added = (await connections(redis.url)) - before;
  assert.ok(added <= 3, `2,000 waits opened ${added} connections`);
  await drain(queue, async (job) => job.payload.toString());
  const results = await Promise.all(waits);
  assert.deepEqual(results, jobs.map((j) => j.payload.toString()));
  assert.equal(Number(await redisCommand(redis.url, 'HLEN', waitersKey)), 0);
});

test('a wait with a 50 ms timeout times out, and one abandoned takes its registration off', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from(''), { id: 'never', delayMs: 3_600_000 });
  await rejectsWith(() => queue.wait('never', { timeoutMs: 50 }), 'TIMEOUT');
  const waitersKey = `${prefix}:{${queue.name}}:waiters`;
  assert.equal(Number(await redisCommand(redis.url, 'HLEN', waitersKey)), 0, 'a timed-out wait left its registration');
});
