// The Promises of async methods: each settles once with its own call's result, however many
// are in flight; a pending call keeps the process alive and an idle binding does not; calls
// from worker threads settle on their thread, and a thread that ends with a call in flight
// harms nobody.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

import { freshJobQueue, ROOT, runNode, unique, useRedis } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/promise_child.mjs');

test('ten thousand calls in flight each settle with their own result or their own error', async () => {
  const { queue } = freshJobQueue(redis.url);
  const calls = [];
  for (let i = 0; i < 10_000; i++) {
    if (i % 10 === 9) {
      calls.push(queue.enqueue(Buffer.from('x'), { maxAttempts: 0 }).then(() => 'resolved', (e) => `rejected ${e.code}`));
    } else {
      calls.push(queue.enqueue(Buffer.from(`${i}`), { id: `job-${i}` }).then((r) => r.id, (e) => `rejected ${e.message}`));
    }
  }
  const got = await Promise.all(calls);
  for (let i = 0; i < 10_000; i++) {
    assert.equal(got[i], i % 10 === 9 ? 'rejected INVALID_ARGUMENT' : `job-${i}`, `call ${i}`);
  }
  assert.equal((await queue.stats()).ready, 9_000);
});

test('a pending call keeps the process alive until it settles', async () => {
  const res = await runNode([CHILD, 'pending', redis.url, unique('q')], { timeoutMs: 20_000 });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.trim(), 'settled TIMEOUT');
});

test('the process exits by itself once no call is pending', async () => {
  const t0 = Date.now();
  const res = await runNode([CHILD, 'idle', redis.url, unique('q')], { timeoutMs: 20_000 });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.trim(), 'done');
  assert.ok(Date.now() - t0 < 15_000);
});

test('calls from worker threads settle on their thread, and a thread ended mid-call harms nobody', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const tideq = require(${JSON.stringify(join(ROOT, 'lib/index.js'))});
    const client = new tideq.Client({ url: workerData.url, prefix: workerData.prefix });
    const q = new tideq.Queue(workerData.name, { client });
    (async () => {
      const ids = [];
      for (let i = 0; i < 200; i++) ids.push((await q.enqueue(Buffer.from('w'))).id);
      parentPort.postMessage(ids.length);
      // Left pending when the thread is terminated.
      q.wait(ids[0], { timeoutMs: 60000 }).catch(() => {});
      parentPort.postMessage('waiting');
    })();
  `;
  const threads = [0, 1].map(() => new Worker(code, { eval: true, workerData: { name: queue.name, url: redis.url, prefix } }));
  const seen = threads.map((w) => new Promise((resolve, reject) => {
    const msgs = [];
    w.on('message', (m) => {
      msgs.push(m);
      if (m === 'waiting') resolve(msgs);
    });
    w.on('error', reject);
  }));
  // The main thread's calls run alongside.
  const mine = await Promise.all(Array.from({ length: 200 }, () => queue.enqueue(Buffer.from('m'))));
  assert.equal(mine.length, 200);
  for (const msgs of await Promise.all(seen)) assert.deepEqual(msgs, [200, 'waiting']);
  await Promise.all(threads.map((w) => w.terminate()));
  assert.equal((await queue.stats()).ready, 600);
  const again = await queue.enqueue(Buffer.from('after'));
  assert.equal(typeof again.id, 'string');
});
