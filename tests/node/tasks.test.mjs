// Tasks by name through the Node binding: enqueueTask(name, data) (JSON by default, MessagePack on
// request), work({ name: (data, job) => ... }) dispatching by name, a job whose name no handler
// has dead-lettered at once, and raw Buffer payloads beside them. Mirrors core/tests/tasks.rs.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, rejectsWith, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

test('a task enqueued by name runs on the handler of that name with its data (JSON by default)', async () => {
  const { queue } = freshJobQueue(redis.url);
  const { id } = await queue.enqueueTask('send-email', { to: 'ada@example.com', n: 1 });
  await queue.enqueueTask('resize', [640, 480], { id: 'img' });
  await queue.enqueueTask('ping');
  await queue.enqueueMany([
    { name: 'send-email', data: { to: 'bob@example.com', n: 2 }, id: 'bob' },
    { name: 'resize', data: [1, 2], priority: 1 },
  ]);
  const stored = await queue.get(id);
  assert.equal(stored.payload.toString(), '{"to":"ada@example.com","n":1}', 'JSON text, as JSON.stringify writes it');
  assert.equal(stored.task, 'send-email', 'the record names its task');
  const { queue: other } = freshJobQueue(redis.url);
  const raw = await other.enqueue(Buffer.from('raw'));
  assert.equal((await other.get(raw.id)).task, null, 'a raw payload has no task');
  const emails = [];
  const sizes = [];
  const pings = [];
  const stats = await queue
    .work(
      {
        'send-email': async (data, job) => {
          assert.ok(job instanceof tideq.Job);
          assert.equal(job.data, data, 'job.data is the same value');
          emails.push([data, job.task, job.format]);
        },
        resize: (data) => void sizes.push(data),
        ping: (data) => void pings.push(data),
      },
      drained,
    )
    .join();
  assert.equal(stats.completed, 5);
  assert.deepEqual(
    emails.sort((a, b) => a[0].n - b[0].n),
    [
      [{ to: 'ada@example.com', n: 1 }, 'send-email', 'json'],
      [{ to: 'bob@example.com', n: 2 }, 'send-email', 'json'],
    ],
  );
  assert.deepEqual(sizes.sort(), [[1, 2], [640, 480]]);
  assert.deepEqual(pings, [null], 'no data is null');
});

test('msgpack: a task enqueued with format msgpack gets its data back, Buffers binary', async () => {
  const { queue } = freshJobQueue(redis.url);
  const data = { bin: Buffer.from([0, 1, 255]), big: 2 ** 40, f: 1.5, s: 'é', list: [null, true, -3] };
  await queue.enqueueTask('blob', data, { format: 'msgpack', id: 'm' });
  let got;
  await queue
    .work({ blob: (d, job) => void (got = [d, job.format, job.task]) }, drained)
    .join();
  assert.deepEqual(got, [data, 'msgpack', 'blob']);
  assert.ok(Buffer.isBuffer(got[0].bin));
  assert.equal((await queue.get('m')).payload[0] & 0xf0, 0x80, 'stored as a MessagePack map');
});

test('an unknown or missing task name is dead-lettered at once with an error naming the known tasks', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueTask('nobody', { x: 1 }, { id: 'unknown', maxAttempts: 5 });
  await queue.enqueue(Buffer.from('raw'), { id: 'raw', maxAttempts: 5 });
  await queue.enqueueTask('known', 1, { id: 'known' });
  let ran = 0;
  const stats = await queue.work({ known: () => void ran++, other: () => {} }, drained).join();
  assert.equal(ran, 1);
  assert.equal(stats.completed, 1);
  const dead = Object.fromEntries((await queue.deadLetters()).map((j) => [j.id, j]));
  assert.equal(dead.unknown.attempts, 1, 'not retried');
  assert.match(dead.unknown.lastError, /unknown task "nobody": this worker runs known, other/);
  assert.equal(dead.raw.attempts, 1);
  assert.match(dead.raw.lastError, /no task name: this worker runs tasks only \(known, other\)/);
  const s = await queue.stats();
  assert.deepEqual([s.dead, s.deadLettered, s.retried], [2, 2, 0]);
});

test('a raw Buffer payload still works with a function handler; job.data throws a clear error for it', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('raw bytes'), { id: 'r' });
  await queue.enqueue(new Uint8Array([1, 2]), { id: 'u' });
  await queue.enqueueMany([Buffer.from('bare')]);
  const got = {};
  const stats = await queue
    .work((job) => {
      got[job.payload.toString('hex')] = [job.task, job.format];
      assert.throws(() => job.data, { code: 'INVALID_ARGUMENT', message: /has a raw payload, not task data/ });
    }, drained)
    .join();
  assert.equal(stats.completed, 3);
  assert.deepEqual(got[Buffer.from('raw bytes').toString('hex')], [null, null]);
  assert.deepEqual(Object.keys(got).length, 3);
  // A function handler also runs task jobs, reading job.data itself.
  await queue.enqueueTask('any', { k: 'v' });
  let data;
  await queue.work((job) => void (data = [job.task, job.data]), drained).join();
  assert.deepEqual(data, ['any', { k: 'v' }]);
});

test('a task handler that throws fails the attempt and is retried; bad task handlers are refused', async () => {
  const { queue } = freshJobQueue(redis.url, { backoff: { type: 'fixed', delayMs: 20 } });
  await queue.enqueueTask('flaky', { id: 7 }, { id: 'f', maxAttempts: 2 });
  const reported = [];
  const stats = await queue
    .work(
      {
        flaky: (data, job) => {
          if (job.attempt === 1) throw new RangeError(`not yet ${data.id}`);
        },
      },
      { ...drained, onError: (err, job) => reported.push([String(err), job.task]) },
    )
    .join();
  assert.deepEqual([stats.completed, stats.failed], [1, 1]);
  assert.deepEqual(reported, [['RangeError: not yet 7', 'flaky']]);
  await rejectsWith(() => queue.work({ t: 1 }), 'INVALID_ARGUMENT', TypeError, /handlers\["t"\] must be a function/);
  await rejectsWith(() => queue.work({}), 'INVALID_ARGUMENT', Error, /at least one task/);
  await rejectsWith(() => queue.work([() => {}]), 'INVALID_ARGUMENT', TypeError, /handler must be a function/);
  await rejectsWith(() => queue.work({ 'bad\nname': () => {} }), 'INVALID_ARGUMENT', Error, /task name/);
});
