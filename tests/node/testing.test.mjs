// `tideq/testing` (issue 42, item 1): the fake and inline test modes and the private redis-server,
// one test per promise of docs/testing.md, and the agreement test: one application module
// (testing_app/app.mjs, its Queue built at import) run inline, fake-drained and by a real worker
// on a private redis-server gives the same state, result, attempts and error for each job.
import assert, { AssertionError } from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { fake, inline, startRedis } from 'tideq/testing';

import { ROOT, rejectsWith, runNode, tideq, unique, waitFor } from './harness.mjs';

let redis;
let app;
before(async () => {
  redis = await startRedis();
  // The application module, imported once the server is up: its Queue reads TIDEQ_REDIS_URL.
  app = await import('./testing_app/app.mjs');
});
after(async () => {
  await redis?.stop();
});

/** Runs `fn(mode)` with `mode` on, and stops it whatever happens. */
async function withMode(mode, fn) {
  try {
    return await fn(mode);
  } finally {
    mode.stop();
  }
}

test('fake: an enqueue is recorded, not sent (no connection is made), and found by task, args in any key order, queue, delay, group, priority and id', async () => {
  await withMode(fake(), async (mode) => {
    assert.equal(mode.mode, 'fake');
    assert.equal(mode.isOn, true);
    // Nothing listens on port 1: a connection would fail with CONNECTION.
    const q = new tideq.Queue('fake-q', { url: 'redis://127.0.0.1:1' });
    const e = await q.enqueueTask('send-email', { to: 'ada', subject: 'hi' }, { delayMs: 5000, group: 'g1', priority: 3, id: 'job-1' });
    assert.deepEqual({ ...e }, { id: 'job-1', created: true });
    const job = mode.assertEnqueued({ task: 'send-email', args: { subject: 'hi', to: 'ada' }, queue: 'fake-q', delayMs: 5000, group: 'g1', priority: 3, id: 'job-1' });
    assert.equal(job.payload.toString(), '{"to":"ada","subject":"hi"}', 'encoded as against Redis');
    assert.deepEqual(job.args, { to: 'ada', subject: 'hi' });
    assert.deepEqual([job.state, job.attempts, job.format, job.delayMs, job.result, job.error], ['enqueued', 0, 'json', 5000, null, null]);
    // The same id again creates nothing, as in Redis.
    assert.equal((await q.enqueueTask('send-email', { to: 'ada' }, { id: 'job-1' })).created, false);
    // MessagePack arguments and raw payloads are recorded too.
    await q.enqueueTask('resize', { w: 640, h: 480, tags: ['a'] }, { format: 'msgpack' });
    await q.enqueue(Buffer.from('raw bytes'));
    assert.deepEqual(mode.assertEnqueued({ args: { tags: ['a'], h: 480, w: 640 } }).format, 'msgpack');
    const raw = mode.jobs({ queue: 'fake-q' }).find((j) => j.task === null);
    assert.equal(raw.payload.toString(), 'raw bytes');
    assert.equal(raw.args, undefined);
    assert.equal(mode.jobs().length, 3);
    assert.equal(mode.enqueued({ task: 'resize' }).length, 1);
  });
});

test('fake: assertEnqueued that finds nothing throws node:assert\'s AssertionError, saying what it looked for and listing what was recorded', async () => {
  await withMode(fake(), async (mode) => {
    const missing = () => mode.assertEnqueued({ task: 'welcome', args: { to: 'bob' } });
    assert.throws(missing, (err) => {
      assert.ok(err instanceof AssertionError, String(err));
      assert.equal(err.code, 'ERR_ASSERTION');
      assert.equal(err.message, 'expected a job with task "welcome", args {"to": "bob"} to be enqueued, but no job was enqueued');
      assert.match(err.stack.split('\n')[1], /testing\.test\.mjs/, 'the stack starts at the caller');
      return true;
    });
    const q = new tideq.Queue('fake-assert');
    const { id } = await q.enqueueTask('welcome', { to: 'ada' });
    assert.throws(missing, (err) => {
      assert.ok(err instanceof AssertionError);
      assert.match(err.message, /^expected a job with task "welcome", args \{"to": "bob"\} to be enqueued, but the 1 job\(s\) enqueued were:\n/);
      assert.ok(err.message.includes(`queue "fake-assert" task "welcome" args {"to": "ada"} id "${id}" (enqueued)`), err.message);
      return true;
    });
  });
});

test('fake: bad input is refused as against Redis, and nothing is recorded', async () => {
  await withMode(fake(), async (mode) => {
    const q = new tideq.Queue('fake-bad');
    await rejectsWith(() => q.enqueue('text'), 'INVALID_ARGUMENT', TypeError, /enqueueTask/);
    await rejectsWith(() => q.enqueueTask('t', () => {}), 'INVALID_ARGUMENT', TypeError, /no JSON form/);
    await rejectsWith(() => q.enqueueTask('t', {}, { delayMs: -1 }), 'INVALID_ARGUMENT');
    await rejectsWith(() => q.enqueueTask('t', {}, { retries: 3 }), 'INVALID_ARGUMENT', Error, /unknown option "retries"/);
    await rejectsWith(() => q.enqueueMany([{ name: 't' }, { payload: 'not bytes' }]), 'INVALID_ARGUMENT');
    assert.deepEqual(mode.jobs(), []);
  });
});

test('fake: enqueued() lists what has not run, jobs() everything; drain runs the record and what its jobs enqueue; clear() forgets it', async () => {
  await withMode(fake(), async (mode) => {
    const { id } = await app.orders.enqueueTask('checkout', { items: [2, 3] });
    assert.deepEqual(mode.enqueued().map((j) => j.task), ['checkout']);
    const report = await mode.drain({ 'orders-app': app.tasks });
    assert.deepEqual({ ...report }, { ran: 2, completed: 2, dead: 0, left: 0 });
    assert.deepEqual(mode.enqueued(), []);
    const [checkout, total] = mode.jobs();
    assert.equal(checkout.id, id);
    assert.deepEqual(checkout.result, { next: total.id });
    assert.deepEqual([total.task, total.state, total.attempts, total.result], ['total', 'completed', 1, { total: 5 }]);
    mode.clear();
    assert.deepEqual(mode.jobs(), []);
  });
});

test('fake: get and wait answer from the record; other operations and workers are refused with NOT_SUPPORTED, naming them', async () => {
  await withMode(fake(), async (mode) => {
    const q = app.orders;
    const { id } = await q.enqueueTask('total', { items: [7] });
    const info = await q.get(id);
    assert.deepEqual([info.id, info.state, info.task], [id, 'ready', 'total']);
    await rejectsWith(() => q.wait(id), 'TIMEOUT', Error, /has not run: in tideq's fake mode nothing runs it until drain\(\)/);
    await mode.drain({ 'orders-app': app.tasks });
    assert.deepEqual(await q.wait(id), { total: 7 });
    await rejectsWith(() => q.stats(), 'NOT_SUPPORTED', Error, /is not available in tideq's fake mode.*test it against a real Redis/);
    await rejectsWith(() => q.cancel(id), 'NOT_SUPPORTED');
    assert.throws(() => q.work(app.tasks), { code: 'NOT_SUPPORTED' });
  });
});

test('one mode at a time: a second throws INVALID_ARGUMENT; stop() is idempotent, keeps the record readable, and enqueues reach Redis again', async () => {
  const mode = fake();
  try {
    assert.throws(() => fake(), { code: 'INVALID_ARGUMENT', message: /fake test mode is already on: stop it/ });
    assert.throws(() => inline({}), { code: 'INVALID_ARGUMENT', message: /already on/ });
    await app.orders.enqueueTask('total', { items: [1] });
  } finally {
    mode.stop();
  }
  mode.stop();
  assert.equal(mode.isOn, false);
  assert.equal(mode.jobs().length, 1, 'the record stays readable');
  const q = new tideq.Queue(unique('after-stop'), { url: redis.url });
  const { id } = await q.enqueueTask('total', { items: [1] });
  assert.equal((await q.get(id)).state, 'ready', 'the job is in Redis');
  assert.equal(mode.jobs().length, 1, 'nothing more was recorded');
});

test('drain: each queue\'s handlers are a defineTasks object, task handlers or one job handler; a queue with none stays recorded', async () => {
  await withMode(fake(), async (mode) => {
    const [a, b, c] = [new tideq.Queue('drain-a'), new tideq.Queue('drain-b'), new tideq.Queue('drain-c')];
    await a.enqueueTask('x', { n: 1 });
    await b.enqueue(Buffer.from('raw-b'));
    await c.enqueueTask('y');
    const seen = [];
    const report = await mode.drain({
      'drain-a': { x: (args, job) => seen.push([args, job.task]) },
      'drain-b': (job) => {
        seen.push(job.payload.toString());
        return 'done';
      },
    });
    assert.deepEqual({ ...report }, { ran: 2, completed: 2, dead: 0, left: 1 });
    assert.deepEqual(seen, [[{ n: 1 }, 'x'], 'raw-b']);
    assert.deepEqual(mode.enqueued().map((j) => j.queue), ['drain-c']);
    assert.equal(mode.jobs({ queue: 'drain-b' })[0].result, 'done');
  });
});

test('bad handlers, options and filters are refused with INVALID_ARGUMENT, and leave no mode on', async () => {
  await withMode(fake(), async (mode) => {
    await rejectsWith(() => mode.drain('orders-app'), 'INVALID_ARGUMENT', TypeError, /handlers must be an object/);
    await rejectsWith(() => mode.drain({ q: 'handler' }), 'INVALID_ARGUMENT', TypeError, /handlers\["q"\] must be a job handler \(job\) => \.\.\. or an object of task handlers/);
    await rejectsWith(() => mode.drain({ q: { t: 1 } }), 'INVALID_ARGUMENT', TypeError, /handlers\["q"\]\["t"\]/);
    await rejectsWith(() => mode.drain({}, { quiet: true }), 'INVALID_ARGUMENT', Error, /unknown option "quiet" in drain options/);
    assert.throws(() => mode.jobs({ delay: 5 }), { code: 'INVALID_ARGUMENT', message: /unknown option "delay" in filter; known options: queue, task, id, args, group, priority, delayMs/ });
    assert.throws(() => mode.enqueued({ priority: 'high' }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => mode.assertEnqueued({ args: () => {} }), { code: 'INVALID_ARGUMENT' });
  });
  assert.throws(() => inline({ q: 5 }), { code: 'INVALID_ARGUMENT', name: 'TypeError' });
  assert.throws(() => inline({}, { raiseErrors: 'yes' }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => inline({}, { raise: true }), { code: 'INVALID_ARGUMENT', message: /unknown option "raise" in inline options/ });
  assert.throws(() => inline('orders-app'), { code: 'INVALID_ARGUMENT' });
  fake().stop(); // no mode was left on
});

test('inline: an enqueue runs its job at once and resolves after it (the jobs it enqueues too); get and wait give the result', async () => {
  await withMode(inline({ 'orders-app': app.tasks }), async (mode) => {
    assert.equal(mode.mode, 'inline');
    const { id } = await app.orders.enqueueTask('total', { items: [4, 5] });
    const [job] = mode.jobs({ id });
    assert.deepEqual([job.state, job.attempts, job.result], ['completed', 1, { total: 9 }]);
    assert.deepEqual(await app.orders.wait(id), { total: 9 });
    assert.equal((await app.orders.get(id)).state, 'completed');
    const checkout = await app.orders.enqueueTask('checkout', { items: [1, 1] });
    const { next } = await app.orders.wait(checkout.id);
    assert.deepEqual(await app.orders.wait(next), { total: 2 }, 'the job it enqueued ran in its enqueue');
    assert.deepEqual(mode.enqueued(), []);
    mode.assertEnqueued({ task: 'checkout', args: { items: [1, 1] } });
  });
});

test('inline: a job that ends dead rejects its enqueue with JOB_FAILED and its error; with raiseErrors false it resolves, recorded dead; onError sees each failure', async () => {
  await withMode(inline({ 'orders-app': app.tasks }), async (mode) => {
    await rejectsWith(() => app.orders.enqueueTask('doomed', {}, { maxAttempts: 2 }), 'JOB_FAILED', Error, /TypeError: card number is not valid/);
    const [job] = mode.jobs({ task: 'doomed' });
    assert.deepEqual([job.state, job.attempts, job.errors], ['dead', 2, ['TypeError: card number is not valid', 'TypeError: card number is not valid']]);
  });
  const reported = [];
  const onError = (err, job) => reported.push([err.message, job.attempt]);
  await withMode(inline({ 'orders-app': app.tasks }, { raiseErrors: false, onError }), async (mode) => {
    const { id } = await app.orders.enqueueTask('refused', { country: 'AQ' }, { maxAttempts: 5 });
    const [job] = mode.jobs({ id });
    assert.deepEqual([job.state, job.attempts, job.error], ['dead', 1, 'DontRetry: country AQ is not served']);
    await rejectsWith(() => app.orders.wait(id), 'JOB_FAILED', Error, /DontRetry: country AQ is not served/);
  });
  assert.deepEqual(reported, [['country AQ is not served', 1]]);
});

test('inline: a job of a queue it has no handlers for is recorded, not run', async () => {
  await withMode(inline({ 'orders-app': app.tasks }), async (mode) => {
    await new tideq.Queue('inline-other').enqueueTask('total', { items: [1] });
    assert.deepEqual(mode.enqueued().map((j) => [j.queue, j.state]), [['inline-other', 'enqueued']]);
  });
});

/** What each job of the scenario became: state, result, attempts and last error. */
function outcome(job) {
  return { state: job.state, result: job.result, attempts: job.attempts, error: job.error ?? job.lastError ?? null };
}

test('the same application module run inline, fake-drained and by a real worker gives the same result, attempts and error for each job', async () => {
  const ran = {};
  // Inline (errors not raised: the scenario goes on past its dead jobs).
  await withMode(inline({ 'orders-app': app.tasks }, { raiseErrors: false }), async (mode) => {
    const ids = await app.placeOrders();
    ran.inline = Object.fromEntries(Object.entries(ids).map(([task, id]) => [task, outcome(mode.jobs({ id })[0])]));
  });
  // Fake, then drained.
  await withMode(fake(), async (mode) => {
    const ids = await app.placeOrders();
    assert.equal(mode.enqueued().length, 4);
    const report = await mode.drain({ 'orders-app': app.tasks });
    assert.deepEqual({ ...report }, { ran: 1 + 3 + 2 + 1, completed: 2, dead: 2, left: 0 });
    ran.fake = Object.fromEntries(Object.entries(ids).map(([task, id]) => [task, outcome(mode.jobs({ id })[0])]));
  });
  // Real: the private redis-server and a worker.
  const ids = await app.placeOrders();
  const worker = app.orders.work(app.tasks, { concurrency: 4, onError: () => {} });
  try {
    for (const id of Object.values(ids)) await app.orders.wait(id, { timeoutMs: 30_000 }).catch(() => {});
  } finally {
    await worker.shutdown();
  }
  ran.real = {};
  for (const [task, id] of Object.entries(ids)) ran.real[task] = outcome(await app.orders.get(id));

  const want = {
    total: { state: 'completed', result: { total: 6 }, attempts: 1, error: null },
    flaky: { state: 'completed', result: 'charged 1200', attempts: 3, error: 'Error: gateway timeout (attempt 2)' },
    doomed: { state: 'dead', result: null, attempts: 2, error: 'TypeError: card number is not valid' },
    refused: { state: 'dead', result: null, attempts: 1, error: 'DontRetry: country AQ is not served' },
  };
  assert.deepEqual(ran.real, want, 'the real worker');
  assert.deepEqual(ran.inline, ran.real, 'inline agrees with the real worker');
  assert.deepEqual(ran.fake, ran.real, 'fake + drain agrees with the real worker');
});

test('startRedis: a private server on a free port; TIDEQ_REDIS_URL points at it until stop(), which puts back the value before', async () => {
  const before = process.env.TIDEQ_REDIS_URL;
  assert.equal(before, redis.url, 'this file\'s own server set it');
  const other = await startRedis();
  assert.notEqual(other.url, redis.url);
  assert.match(other.url, /^redis:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(process.env.TIDEQ_REDIS_URL, other.url);
  const name = unique('start-redis');
  const { id } = await new tideq.Queue(name).enqueueTask('t');
  assert.notEqual(await new tideq.Queue(name, { url: other.url }).get(id), null, 'a queue built without a URL used it');
  assert.equal(await new tideq.Queue(name, { url: redis.url }).get(id), null);
  assert.match(other.log(), /Ready to accept connections/);
  await other.stop();
  await other.stop();
  assert.equal(process.env.TIDEQ_REDIS_URL, before);
  assert.equal(alive(other.pid), false, 'the server is gone (stop() waited for it)');
  const quiet = await startRedis({ setEnv: false, args: ['--maxmemory', '10mb'] });
  try {
    assert.equal(process.env.TIDEQ_REDIS_URL, before);
  } finally {
    await quiet.stop();
  }
});

test('startRedis without a redis-server rejects with NOT_SUPPORTED, saying how to install one', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'tideq-no-redis-'));
  const path = process.env.PATH;
  process.env.PATH = empty;
  try {
    await rejectsWith(() => startRedis(), 'NOT_SUPPORTED', Error, /redis-server was not found on the PATH\. It needs a redis-server \(Redis 7 or later\): install Redis \(Debian\/Ubuntu: apt-get install redis-server; macOS: brew install redis\), or pass its path/);
  } finally {
    process.env.PATH = path;
    rmSync(empty, { recursive: true, force: true });
  }
  await rejectsWith(() => startRedis({ command: '/nonexistent/redis-server' }), 'NOT_SUPPORTED', Error, /^startRedis: \/nonexistent\/redis-server was not found\. It needs/);
  assert.equal(process.env.TIDEQ_REDIS_URL, redis.url, 'left as it was');
});

test('startRedis refuses bad options, and reports a server that would not start with its log', async () => {
  await rejectsWith(() => startRedis({ port: 6379 }), 'INVALID_ARGUMENT', TypeError, /unknown option "port"/);
  await rejectsWith(() => startRedis({ args: '--port 1' }), 'INVALID_ARGUMENT', TypeError, /args must be an array of strings/);
  await rejectsWith(() => startRedis({ timeoutMs: 0 }), 'INVALID_ARGUMENT');
  await rejectsWith(() => startRedis({ setEnv: 'no' }), 'INVALID_ARGUMENT');
  await rejectsWith(() => startRedis('redis-server'), 'INVALID_ARGUMENT');
  await rejectsWith(() => startRedis({ args: ['--no-such-directive', 'x'] }), 'CONNECTION', Error, /exited \(1\) before it answered.*\n[\s\S]*no-such-directive/);
});

test('a test process that forgets to stop its server and its inline mode still exits, and its server is killed', async () => {
  const { code, stdout, stderr } = await runNode([join(ROOT, 'tests', 'node', 'testing_app', 'forgetful.mjs')], { timeoutMs: 30_000 });
  assert.equal(code, 0, stderr);
  const [pid, ran] = stdout.trim().split('\n');
  assert.equal(ran, 'ran 3');
  // Killed by the child's exit hook (SIGKILL): gone once the kernel has torn it down.
  await waitFor(() => !alive(Number(pid)), `redis-server ${pid} to be gone`);
});

/** Whether process `pid` exists. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if (err.code === 'ESRCH') return false;
    throw err;
  }
}
