// Schedules through the Node binding, against a real redis-server: worker processes driving the
// same schedules make exactly one job per slot; declaring a schedule again keeps its next slot;
// schedules() lists them; removeSchedule stops one; bad schedules write nothing; a worker with
// `schedules: false` fires nothing; a task schedule runs its task's handler. Mirrors
// core/tests/schedules.rs.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freshJobQueue, keysWithPrefix, rejectsWith, runNode, sleep, unique, useRedis, waitFor } from './harness.mjs';

const redis = useRedis();
const CHILD = join(ROOT, 'tests/node/schedule_child.mjs');

/** Slot times per schedule name, sorted, from job ids `<name>@<slot ms>`. */
function slotsByName(ids) {
  const out = {};
  for (const id of ids) {
    const at = id.lastIndexOf('@');
    (out[id.slice(0, at)] ??= []).push(Number(id.slice(at + 1)));
  }
  for (const slots of Object.values(out)) slots.sort((a, b) => a - b);
  return out;
}

/** No slot twice, none skipped. */
function assertOneJobPerSlot(what, slots, step) {
  assert.equal(new Set(slots).size, slots.length, `${what}: a slot ran twice: ${slots}`);
  for (let i = 1; i < slots.length; i++) {
    assert.equal(slots[i] - slots[i - 1], step, `${what}: a slot was skipped: ${slots}`);
  }
}

test('three worker processes driving the same schedules for six seconds make exactly one job per slot', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const tick = await queue.upsertSchedule('tick', Buffer.from('i'), { everyMs: 1000 });
  const cron = await queue.upsertSchedule('cron', Buffer.from('c'), { cron: '* * * * * *' });
  assert.equal(tick % 1000, 0);
  assert.equal(cron % 1000, 0);
  const runs = await Promise.all(
    [0, 1, 2].map(() => runNode([CHILD, redis.url, prefix, queue.name, '6000'], { timeoutMs: 30_000 })),
  );
  const ids = [];
  for (const res of runs) {
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines[0], 'ready');
    assert.match(lines.at(-1), /^stats /);
    for (const line of lines.slice(1, -1)) {
      const [, id, payload] = line.split(' ');
      assert.equal(payload, id.startsWith('tick@') ? 'i' : 'c', line);
      ids.push(id);
    }
  }
  const slots = slotsByName(ids);
  assert.deepEqual(Object.keys(slots).sort(), ['cron', 'tick']);
  for (const [name, v] of Object.entries(slots)) {
    assert.ok(v.length >= 4, `${name}: ${v}`);
    assertOneJobPerSlot(name, v, 1000);
  }
});

test('upserting the same schedule twice keeps its nextRunMs and schedules() lists it', async () => {
  const { queue } = freshJobQueue(redis.url);
  const daily = { cron: '0 9 * * 1-5', timezone: 'Europe/Paris', task: 'report', priority: 3 };
  const first = await queue.upsertSchedule('daily', { to: 'ada' }, daily);
  assert.equal(typeof first, 'number');
  assert.equal(await queue.upsertSchedule('daily', { to: 'ada' }, daily), first);
  // 09:00 in Paris is 07:00 or 08:00 UTC.
  assert.ok([7, 8].includes(new Date(first).getUTCHours()), new Date(first).toISOString());
  const tick = { everyMs: 60_000, group: 'g', maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 }, timeoutMs: 500 };
  const next = await queue.upsertSchedule('tick', Buffer.from([0, 255]), tick);
  assert.equal(next % 60_000, 0);
  assert.deepEqual(await queue.schedules(), [
    {
      name: 'daily',
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      payload: Buffer.from('{"to":"ada"}'),
      nextRunMs: first,
      task: 'report',
      format: 'json',
      priority: 3,
      paused: false,
      lastJobId: null,
      lastJobState: null,
    },
    {
      name: 'tick',
      everyMs: 60_000,
      payload: Buffer.from([0, 255]),
      nextRunMs: next,
      group: 'g',
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 10 },
      timeoutMs: 500,
      paused: false,
      lastJobId: null,
      lastJobState: null,
    },
  ]);
});

test('removeSchedule stops a schedule: it fires no more', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.upsertSchedule('s', Buffer.from('x'), { everyMs: 100 });
  const seen = [];
  const worker = queue.work((job) => void seen.push(job.id), { pollIntervalMs: 100 });
  try {
    await waitFor(() => seen.length > 0, 'a first slot', 5_000);
    assert.equal(await queue.removeSchedule('s'), true);
    await sleep(200);
    const n = seen.length;
    await sleep(600);
    assert.equal(seen.length, n, `slots after the removal: ${seen.slice(n)}`);
    assert.equal(await queue.removeSchedule('s'), false);
    assert.deepEqual(await queue.schedules(), []);
  } finally {
    await worker.shutdown();
  }
});

test('bad schedules reject with INVALID_ARGUMENT and write nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const x = Buffer.from('x');
  const cases = [
    ['a', { cron: 'not a cron' }, /cron pattern/],
    ['a', { cron: '61 * * * *' }, /cron pattern/],
    ['a', { cron: '0 0 30 2 *' }, /never occurs/],
    ['a', { cron: '* * * * *', timezone: 'Mars/Olympus' }, /unknown time zone/],
    ['a', { everyMs: 0 }, /at least 10 ms/],
    ['a', { everyMs: 5 }, /at least 10 ms/],
    ['a', { everyMs: -1 }, /everyMs/],
    ['a', { cron: '* * * * *', everyMs: 1000 }, /cron or everyMs, not both/],
    ['a', {}, /need cron \(a pattern\) or everyMs/],
    ['a', undefined, /need cron \(a pattern\) or everyMs/],
    ['a', { everyMs: 1000, timezone: 'UTC' }, /timezone goes with cron/],
    ['a', { everyMs: 1000, priority: 0 }, /priority/],
    ['a', { everyMs: 1000, format: 'json' }, /format applies to tasks/],
    ['a', { everyMs: 1000, id: 'fixed' }, /unknown option "id"/],
    ['a', { everyMs: 1000, delayMs: 10 }, /unknown option "delayMs"/],
    ['', { everyMs: 1000 }, /schedule name/],
    ['n'.repeat(201), { everyMs: 1000 }, /at most 200 bytes/],
  ];
  for (const [name, opts, message] of cases) {
    await rejectsWith(() => queue.upsertSchedule(name, x, opts), 'INVALID_ARGUMENT', Error, message);
  }
  await rejectsWith(() => queue.upsertSchedule('a', 'text', { everyMs: 1000 }), 'INVALID_ARGUMENT', TypeError, /payload must be a Buffer/);
  await rejectsWith(() => queue.upsertSchedule('a', () => {}, { everyMs: 1000, task: 't' }), 'INVALID_ARGUMENT', TypeError, /no JSON form/);
  await rejectsWith(() => queue.removeSchedule(''), 'INVALID_ARGUMENT');
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});

test('a worker with schedules: false fires nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.upsertSchedule('s', Buffer.from('x'), { everyMs: 100 });
  const seen = [];
  const off = [
    queue.work((job) => void seen.push(job.id), { schedules: false, pollIntervalMs: 100 }),
    queue.workBatches((jobs) => void seen.push(...jobs.map((j) => j.id)), { size: 2, schedules: false, pollIntervalMs: 100 }),
  ];
  await sleep(800);
  assert.deepEqual(seen, []);
  assert.equal((await queue.stats()).enqueued, 0);
  // The schedule was live all along: a worker that drives schedules fires it.
  const on = queue.work((job) => void seen.push(job.id), { pollIntervalMs: 100 });
  await waitFor(() => seen.length > 0, 'a slot fired by the default worker', 5_000);
  assert.match(seen[0], /^s@\d+$/);
  await Promise.all([...off, on].map((w) => w.shutdown()));
});

test("a task schedule's jobs run the task's handler with its data", async () => {
  const { queue } = freshJobQueue(redis.url);
  const name = unique('digest');
  await queue.upsertSchedule(name, { user: 'ada', items: [1, 2] }, { everyMs: 100, task: 'digest', format: 'msgpack' });
  const runs = [];
  const worker = queue.work({ digest: (data, job) => void runs.push([data, job.id, job.format]) }, { pollIntervalMs: 100 });
  try {
    await waitFor(() => runs.length > 0, 'a digest job', 5_000);
    const [data, id, format] = runs[0];
    assert.deepEqual(data, { user: 'ada', items: [1, 2] });
    assert.match(id, new RegExp(`^${name}@\\d+$`));
    assert.equal(format, 'msgpack');
  } finally {
    await worker.shutdown();
  }
});
