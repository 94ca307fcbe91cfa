// The event log through the Node binding, against a real redis-server: off by default; a reader
// sees each job's events in order with their data; a named reader killed (SIGKILL) and started
// again misses nothing within the log; one that fell behind the log is told (`lagged`);
// `for await` and `break`; the EventEmitter form; errors with their codes. Mirrors
// core/tests/events.rs.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freePort, freshJobQueue, keysWithPrefix, rejectsWith, runNode, tideq, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/events_child.mjs');
const drained = { stopWhenDrained: true, pollIntervalMs: 100, onError: () => {} };

/** The next `n` events of `reader`, each within 5 s. */
async function take(reader, n) {
  const out = [];
  while (out.length < n) {
    const e = await reader.next({ timeoutMs: 5_000 });
    assert.ok(e, `only ${out.length} of ${n} events came: ${JSON.stringify(out)}`);
    out.push(e);
  }
  return out;
}

/** The events a reader gives until none comes for `idleMs`. */
async function drain(reader, idleMs = 300) {
  const out = [];
  for (let e; (e = await reader.next({ timeoutMs: idleMs })); ) out.push(e);
  return out;
}

test('events are off by default: nothing is logged and a reader sees nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const reader = queue.events({ fromStart: true });
  await reader.ready();
  await queue.enqueue(Buffer.from('x'), { id: 'a' });
  await queue.run(() => {}, drained);
  assert.equal(await reader.next({ timeoutMs: 200 }), null);
  assert.deepEqual((await keysWithPrefix(redis.url, prefix)).filter((k) => k.endsWith(':events')), []);
  await reader.close();
});

test('setEvents(0) rejects with INVALID_ARGUMENT, a non-number with a TypeError, and setEvents(null) turns the log off and deletes it', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await rejectsWith(() => queue.setEvents(0), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.setEvents('10'), 'INVALID_ARGUMENT', TypeError, /maxLen must be a number/);
  await rejectsWith(() => queue.setEvents(), 'INVALID_ARGUMENT', TypeError, /or null/);
  await rejectsWith(() => queue.setEvents(-1), 'INVALID_ARGUMENT');
  await queue.setEvents(100);
  await queue.enqueue(Buffer.from('x'), { id: 'a' });
  const logs = async () => (await keysWithPrefix(redis.url, prefix)).filter((k) => k.endsWith(':events'));
  assert.equal((await logs()).length, 1);
  await queue.setEvents(null);
  await queue.enqueue(Buffer.from('x'), { id: 'b' });
  assert.deepEqual(await logs(), []);
});

test("a reader sees each job's events in order with their data: results, errors, progress, retries, dead letters and cancels", async () => {
  const { queue } = freshJobQueue(redis.url, { backoff: { type: 'fixed', delayMs: 10 } });
  await queue.setEvents(1000);
  const reader = queue.events();
  await reader.ready();
  await queue.enqueue(Buffer.from('ok'), { id: 'good' });
  await queue.enqueue(Buffer.from('bad'), { id: 'bad', maxAttempts: 2 });
  await queue.enqueue(Buffer.from('later'), { id: 'gone', delayMs: 60_000 });
  await queue.cancel('gone');
  await queue.run(async (job) => {
    if (job.id === 'bad') throw new Error('broken');
    await job.progress({ done: 50 });
    return { sent: true };
  }, drained);
  const all = await take(reader, 13);
  const of = (id) => all.filter((e) => e.jobId === id).map((e) => [e.kind, e.data === null ? null : e.data.toString()]);
  assert.deepEqual(of('good'), [
    ['enqueued', null],
    ['active', '1'],
    ['progress', '{"done":50}'],
    ['completed', '{"sent":true}'],
  ]);
  assert.deepEqual(of('bad'), [
    ['enqueued', null],
    ['active', '1'],
    ['failed', 'Error: broken'],
    ['retried', '10'],
    ['active', '2'],
    ['failed', 'Error: broken'],
    ['dead', 'Error: broken'],
  ]);
  assert.deepEqual(of('gone'), [
    ['enqueued', null],
    ['cancelled', null],
  ]);
  // `value` is the data read as JobInfo.result is: JSON parsed, else the Buffer.
  const good = all.filter((e) => e.jobId === 'good');
  assert.deepEqual(
    good.map((e) => e.value),
    [null, 1, { done: 50 }, { sent: true }],
  );
  const dead = all.find((e) => e.kind === 'dead');
  assert.ok(Buffer.isBuffer(dead.value) && dead.value.equals(Buffer.from('Error: broken')));
  assert.ok(all.every((e) => typeof e.atMs === 'number' && e.atMs > 1.6e12), JSON.stringify(all));
  assert.deepEqual(Object.keys(all[0]).sort(), ['atMs', 'data', 'dataOmittedBytes', 'jobId', 'kind', 'value']);
  assert.ok(all.every((e) => e.dataOmittedBytes === null));
  await reader.close();
});

test('a large result kept with its job reaches readers in full, and one not kept gives its size (the log holds sizes, not results)', async () => {
  const big = Buffer.alloc(5000, 'r');
  const kept = freshJobQueue(redis.url);
  const notKept = freshJobQueue(redis.url, { keepCompleted: 0 });
  for (const { queue } of [kept, notKept]) {
    await queue.setEvents(100);
    await queue.enqueueMany(Array.from({ length: 20 }, () => ({ payload: Buffer.from('x') })));
    await queue.run(() => big, drained);
  }
  const completed = async (queue) => {
    const reader = queue.events({ fromStart: true });
    const all = await take(reader, 60);
    await reader.close();
    return all.filter((e) => e.kind === 'completed');
  };
  const full = await completed(kept.queue);
  assert.equal(full.length, 20);
  assert.ok(full.every((e) => e.data.equals(big) && e.dataOmittedBytes === null));
  const sized = await completed(notKept.queue);
  assert.deepEqual(
    sized.map((e) => [e.data, e.dataOmittedBytes, e.value]),
    Array.from({ length: 20 }, () => [null, 5000, null]),
  );
});

test('a named reader killed and restarted misses nothing within retention, and resumes after what it had read', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.setEvents(10_000);
  const ids = (p, n) => Array.from({ length: n }, (_, i) => `${p}${i}`);
  const enqueue = async (list) => {
    for (const id of list) await queue.enqueue(Buffer.from('x'), { id });
  };
  const child = (idleMs, onSpawn) =>
    runNode([CHILD, redis.url, prefix, queue.name, 'mailer', String(idleMs)], { timeoutMs: 20_000, onSpawn });
  const seen = (stdout) => stdout.split('\n').filter((l) => l.startsWith('enqueued ')).map((l) => l.slice('enqueued '.length));

  await enqueue(ids('a', 5));
  let killedAfter = [];
  const first = await child(0, (proc, out) => {
    (async () => {
      // All of a0..a4 taken: the reader is waiting for more. More comes; kill it mid-way.
      await waitFor(() => seen(out()).length >= 5, 'the first five events', 10_000);
      await enqueue(ids('a', 10).slice(5));
      await waitFor(() => seen(out()).length >= 7, 'two more events', 10_000);
      killedAfter = seen(out());
      proc.kill('SIGKILL');
    })().catch((err) => {
      proc.kill('SIGKILL');
      throw err;
    });
  });
  assert.equal(first.signal, 'SIGKILL', first.stderr);
  assert.ok(killedAfter.length >= 7 && killedAfter.length <= 10, killedAfter.join(' '));
  await enqueue(ids('b', 5));

  const second = await child(1_000);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(second.stdout.trim().split('\n').at(-1), 'idle');
  const again = seen(second.stdout);
  const want = [...ids('a', 10), ...ids('b', 5)];
  assert.deepEqual([...new Set([...seen(first.stdout), ...again])].sort(), [...want].sort());
  // Its place was stored when it went back to Redis for a5...: none of a0..a4 comes again.
  assert.ok(!again.some((id) => ids('a', 5).includes(id)), again.join(' '));
  // In the log's order, each id once (within a run).
  assert.deepEqual(again, want.filter((id) => again.includes(id)));
  assert.ok(!second.stdout.includes('lagged'), second.stdout);

  // Started a third time after it stored its place at the end: nothing again.
  const third = await child(300);
  assert.equal(third.code, 0, third.stderr);
  assert.equal(third.stdout.trim(), 'idle');
});

test('a named reader that fell behind the log is told first, with a lagged event, then goes on from the oldest event kept', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setEvents(10);
  await queue.enqueue(Buffer.from('x'), { id: 'first' });
  let reader = queue.events({ name: 'slow' });
  await reader.ready();
  await queue.enqueue(Buffer.from('x'), { id: 'second' });
  const [second] = await take(reader, 1);
  assert.equal(second.jobId, 'second');
  await reader.commit();
  await reader.close();
  // Far more entries than the log keeps (one each).
  for (let i = 0; i < 500; i++) await queue.enqueue(Buffer.from('x'), { id: `j${i}` });
  reader = queue.events({ name: 'slow' });
  const [lagged, next] = await take(reader, 2);
  assert.equal(lagged.kind, 'lagged');
  assert.equal(lagged.jobId, '');
  const missed = Number(/^(\d+) event log entries were trimmed/.exec(lagged.data.toString())?.[1]);
  assert.ok(missed > 0, lagged.data.toString());
  assert.equal(next.kind, 'enqueued');
  const rest = await drain(reader, 200);
  assert.equal((rest.at(-1) ?? next).jobId, 'j499');
  // Of the 500 entries after its place, those it missed and those it then read.
  assert.equal(missed + 1 + rest.length, 500);
  await reader.close();
});

test('for await works on queue.events() directly, break ends it and closes the reader, and close() ends a waiting loop', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setEvents(100);
  for (const id of ['a', 'b', 'c']) await queue.enqueue(Buffer.from('x'), { id });

  const got = [];
  for await (const e of queue.events({ fromStart: true })) {
    got.push(e.jobId);
    if (got.length === 2) break;
  }
  assert.deepEqual(got, ['a', 'b']);

  // A reader kept in a variable: after break, it is closed.
  const reader = queue.events({ fromStart: true });
  for await (const e of reader) {
    assert.equal(e.jobId, 'a');
    break;
  }
  assert.equal(await reader.next({ timeoutMs: 1_000 }), null);
  await rejectsWith(() => reader.commit(), 'CLOSED');

  // close() from elsewhere ends a loop that waits for the next event, cleanly.
  const waiting = queue.events();
  await waiting.ready();
  const loop = (async () => {
    const out = [];
    for await (const e of waiting) out.push(e.jobId);
    return out;
  })();
  await queue.enqueue(Buffer.from('x'), { id: 'd' });
  setTimeout(() => waiting.close(), 300);
  assert.deepEqual(await loop, ['d']);
});

test('the EventEmitter form emits "ready", then each event under its kind and as "event", and close() stops it after "close"', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.setEvents(100);
  const emitter = queue.eventEmitter();
  const all = [];
  emitter.on('event', (e) => all.push(`${e.kind} ${e.jobId}`));
  const completed = once(emitter, 'completed');
  const closed = once(emitter, 'close');
  // 'ready': its place is fixed (by a request sent at the call).
  await once(emitter, 'ready');
  await queue.enqueueTask('send', { to: 'ada' }, { id: 'j1' });
  await queue.run({ send: (data) => ({ sent: data.to }) }, drained);
  const [e] = await completed;
  assert.equal(e.kind, 'completed');
  assert.equal(e.jobId, 'j1');
  assert.deepEqual(e.value, { sent: 'ada' });
  assert.deepEqual(all, ['enqueued j1', 'active j1', 'completed j1']);
  assert.ok(emitter instanceof (await import('node:events')).EventEmitter);
  await emitter.close();
  await closed;
  await queue.enqueue(Buffer.from('x'), { id: 'after' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(all.length, 3);
});

test('errors: options are checked at the call, a bad name rejects ready() and next() and is the emitter\'s "error", and a failure ends for await with its code', async () => {
  const { queue } = freshJobQueue(redis.url);
  assert.throws(() => queue.events({ nmae: 'x' }), (err) => err.code === 'INVALID_ARGUMENT' && /unknown option "nmae"/.test(err.message));
  assert.throws(() => queue.events({ name: 5 }), (err) => err.code === 'INVALID_ARGUMENT' && err instanceof TypeError);
  assert.throws(() => queue.eventEmitter({ fromStart: 'yes' }), TypeError);

  const bad = queue.events({ name: '' });
  await rejectsWith(() => bad.ready(), 'INVALID_ARGUMENT', Error, /event reader name/);
  await rejectsWith(() => bad.next(), 'INVALID_ARGUMENT');
  await rejectsWith(() => bad.next({ timeoutMs: -1 }), 'INVALID_ARGUMENT');

  const emitter = queue.eventEmitter({ name: '' });
  const [err] = await once(emitter, 'error');
  assert.equal(err.code, 'INVALID_ARGUMENT');
  await once(emitter, 'close');
  await emitter.close();

  // Redis unreachable: the loop throws the tideq error (its code), not a generic one.
  const port = await freePort();
  const down = new tideq.Queue('q', { client: new tideq.Client({ url: `redis://127.0.0.1:${port}` }) });
  let caught;
  try {
    for await (const e of down.events()) assert.fail(`no event expected: ${e}`);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof Error, String(caught));
  assert.equal(caught.code, 'CONNECTION', String(caught));
});
