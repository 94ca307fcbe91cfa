// serve(workers, options), the worker option maxJobs and worker.isReady() through the Node
// binding (the core's tideq::serve and Worker::is_ready). serve as a child process's main loop
// (SIGTERM, the supervisor's status pipe) is in worker_child.test.mjs and worker_cli.test.mjs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freePort, freshJobQueue, rejectsWith, sleep, tideq, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();

async function enqueue(queue, n) {
  await queue.enqueueMany(Array.from({ length: n }, (_, i) => ({ payload: Buffer.from(String(i)) })));
}

test('maxJobs: the worker leases exactly that many jobs, finishes them and stops by itself', async () => {
  const { queue } = freshJobQueue(redis.url);
  await enqueue(queue, 25);
  let ran = 0;
  const worker = queue.work(
    async () => {
      ran++;
      await sleep(5);
    },
    { maxJobs: 7, concurrency: 3 },
  );
  const stats = await worker.join();
  assert.equal(stats.completed, 7);
  assert.equal(ran, 7);
  assert.equal(worker.running, false);
  assert.equal(worker.error, null);
  const q = await queue.stats();
  assert.equal(q.ready, 18);
  assert.equal(q.active, 0);
});

test('maxJobs counts jobs, not batches, in workBatches', async () => {
  const { queue } = freshJobQueue(redis.url);
  await enqueue(queue, 20);
  let jobs = 0;
  const worker = queue.workBatches(
    (batch) => {
      jobs += batch.length;
    },
    { size: 4, maxJobs: 10 },
  );
  const stats = await worker.join();
  assert.equal(stats.completed, 10);
  assert.equal(jobs, 10);
  assert.equal((await queue.stats()).ready, 10);
});

test('maxJobs must be a whole number of at least 1 (INVALID_ARGUMENT, no worker started)', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const bad of [0, -1, 1.5, 'ten']) {
    assert.throws(() => queue.work(() => {}, { maxJobs: bad }), (err) => {
      assert.equal(err.code, 'INVALID_ARGUMENT', String(err));
      assert.match(err.message, /maxJobs|max_jobs/);
      return true;
    });
  }
  assert.deepEqual(await queue.workers(), []);
});

test('isReady(): false before the first fetch and against a Redis that is not there, true once leasing, false once stopped', async () => {
  const { queue } = freshJobQueue(redis.url);
  const worker = queue.work(() => {}, { pollIntervalMs: 100 });
  await waitFor(() => worker.isReady(), 'the worker to be ready');
  await worker.shutdown();
  assert.equal(worker.isReady(), false);

  const port = await freePort();
  const { queue: nowhere } = freshJobQueue(`redis://127.0.0.1:${port}`, {}, { connectTimeoutMs: 200 });
  const lost = nowhere.work(() => {}, { pollIntervalMs: 100 });
  await waitFor(() => lost.stats().fetchErrors >= 2, 'two failed fetches');
  assert.equal(lost.isReady(), false);
  lost.abort();
  await lost.join().catch(() => {});
});

test('serve(workers, { maxJobs }): the workers of two queues together run that many jobs, then it resolves with their stats', async () => {
  const a = freshJobQueue(redis.url);
  const b = freshJobQueue(redis.url);
  await enqueue(a.queue, 20);
  await enqueue(b.queue, 20);
  const ran = { a: 0, b: 0 };
  const workers = [
    a.queue.work(() => void ran.a++, { concurrency: 2, maxJobs: 6 }),
    b.queue.work(() => void ran.b++, { concurrency: 1, maxJobs: 6 }),
  ];
  const stats = await tideq.serve(workers, { maxJobs: 12 });
  assert.equal(stats.length, 2);
  assert.equal(stats[0].completed, ran.a);
  assert.equal(stats[1].completed, ran.b);
  assert.equal(ran.a + ran.b, 12);
  assert.ok(workers.every((w) => !w.running));
});

test('serve resolves once every worker stopped by itself (stopWhenDrained)', async () => {
  const { queue } = freshJobQueue(redis.url);
  await enqueue(queue, 5);
  const stats = await tideq.serve([queue.work(() => {}, { stopWhenDrained: true, pollIntervalMs: 50 })]);
  assert.equal(stats[0].completed, 5);
});

test('serve({ health }): /livez 200 while serving, /readyz 200 while every worker is ready', async () => {
  const { queue } = freshJobQueue(redis.url);
  const port = await freePort();
  const worker = queue.work(() => {}, { pollIntervalMs: 100 });
  const served = tideq.serve([worker], { health: `127.0.0.1:${port}` });
  const status = async (path) => (await fetch(`http://127.0.0.1:${port}${path}`).catch(() => ({ status: 0 }))).status;
  let ready = 0;
  for (let i = 0; i < 200 && ready !== 200; i++) {
    ready = await status('/readyz');
    if (ready !== 200) await sleep(50);
  }
  assert.equal(ready, 200);
  assert.equal(await status('/livez'), 200);
  worker.stop();
  const stats = await served;
  assert.equal(stats.length, 1);
  assert.equal(await status('/livez'), 0, 'the endpoint closes when serve returns');
});

test('serve refuses bad arguments (INVALID_ARGUMENT or TypeError, nothing stopped)', async () => {
  const { queue } = freshJobQueue(redis.url);
  const worker = queue.work(() => {});
  await rejectsWith(() => tideq.serve([]), 'INVALID_ARGUMENT', Error, /at least one worker/);
  await rejectsWith(() => tideq.serve([worker], { maxJobs: 0 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => tideq.serve([worker], { health: 'not an address' }), 'INVALID_ARGUMENT', Error, /host:port/);
  await rejectsWith(() => tideq.serve([worker], { port: 1 }), 'INVALID_ARGUMENT', Error, /port/);
  await rejectsWith(() => tideq.serve([queue]), 'INVALID_ARGUMENT', TypeError, /workers\[0\] must be a Worker/);
  await rejectsWith(() => tideq.serve(worker), 'INVALID_ARGUMENT', TypeError, /must be an array/);
  assert.equal(worker.running, true);
  await worker.shutdown();
});
