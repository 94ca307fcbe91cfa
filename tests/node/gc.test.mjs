// A worker or consumer whose handle is not kept runs on: its JS object is garbage-collected
// (forced with node --expose-gc, proven by a FinalizationRegistry), and the child process still
// takes every job enqueued afterwards and stays alive. Each kind runs in a child process
// (tests/node/gc_child.mjs) so a stopped worker shows as an exit, not as a hung test.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freshJobQueue, freshQueue, runNode, sleep, useRedis } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/gc_child.mjs');
const COUNT = 20;

/** Starts the child; resolves once it printed `ready` (after its handle was collected). */
async function startChild(kind, queue, prefix) {
  let child;
  let readStdout;
  const done = runNode(['--expose-gc', CHILD, kind, redis.url, prefix, queue.name, String(COUNT)], {
    timeoutMs: 60_000,
    onSpawn: (c, read) => {
      child = c;
      readStdout = read;
    },
  });
  const deadline = Date.now() + 20_000;
  while (!readStdout?.().includes('ready')) {
    if (child?.exitCode !== null && child?.exitCode !== undefined) break;
    if (Date.now() > deadline) throw new Error(`the child never got ready: ${readStdout?.()}`);
    await sleep(10);
  }
  return { child, done, out: () => readStdout() };
}

async function runsEveryJobAfterItsHandleIsCollected(kind, enqueue, queue, prefix) {
  const { child, done, out } = await startChild(kind, queue, prefix);
  try {
    assert.equal(child.exitCode, null, `the process exited once the handle was collected: ${out()}`);
    assert.match(out(), /ready \(handle collected\)/, 'the test did not make the handle collectable');
    await enqueue();
    const deadline = Date.now() + 20_000;
    while (!out().includes('done')) {
      assert.equal(child.exitCode, null, `the process exited with ${child.exitCode} after: ${out()}`);
      assert.ok(Date.now() < deadline, `not every job ran: ${out()}`);
      await sleep(20);
    }
    assert.equal(out().split('\n').filter((l) => l.startsWith('ran ')).length, COUNT);
    // Still alive afterwards: the worker is idle, not stopped.
    await sleep(300);
    assert.equal(child.exitCode, null, 'the process exited while its worker was idle');
  } finally {
    child.kill('SIGKILL');
    await done;
  }
}

const jobs = (queue) => () =>
  queue.enqueueMany(Array.from({ length: COUNT }, (_, i) => ({ payload: Buffer.from(`${i}`), id: `j${i}` })));

test('a worker whose handle is garbage-collected keeps taking jobs and keeps the process alive', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await runsEveryJobAfterItsHandleIsCollected('worker', jobs(queue), queue, prefix);
});

test('a batch worker whose handle is garbage-collected keeps taking jobs', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await runsEveryJobAfterItsHandleIsCollected('batch-worker', jobs(queue), queue, prefix);
});

test('a task worker whose handle is garbage-collected keeps taking tasks', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const tasks = () => queue.enqueueMany(Array.from({ length: COUNT }, (_, i) => ({ name: 'greet', data: { n: i } })));
  await runsEveryJobAfterItsHandleIsCollected('task-worker', tasks, queue, prefix);
});

test('a capped consumer whose handle is garbage-collected keeps taking items', async () => {
  const { queue, prefix } = freshQueue(redis.url);
  const items = () => queue.pushMany(Array.from({ length: COUNT }, (_, i) => [`g${i % 4}`, Buffer.from(`${i}`)]));
  await runsEveryJobAfterItsHandleIsCollected('consumer', items, queue, prefix);
});
