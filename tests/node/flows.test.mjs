// Flows through the Node binding (enqueueFlow, childrenResults), against a real redis-server:
// a parent runs once after its children and reads how they ended, children on other queues,
// tasks in a flow, onFailure, what get shows of a flow, cancel, and every bad input refused with
// nothing written. The deep promises are core/tests/workflows.rs's; these check the binding.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, keysWithPrefix, rejectsWith, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const fast = { pollIntervalMs: 50, concurrency: 4 };

/** A raw flow job with this id (its payload: the id). */
const node = (id, more = {}) => ({ payload: Buffer.from(id), id, ...more });

/** A child's result as the test reads it: "queue/id=outcome[:result or error]". */
const seen = (c) => {
  const detail = c.resultBytes !== null ? `:${c.resultBytes}` : c.error !== null ? `:${c.error}` : '';
  return `${c.queue}/${c.id}=${c.outcome}${detail}`;
};

/**
 * Runs a worker on each queue (the same `handler`) until `ids` (of `queues[0]`) finished, then
 * stops them. Resolves with the outcome of each `wait` (its value, or its error's code).
 */
async function runUntil(queues, ids, handler) {
  const workers = queues.map((q) => q.work(handler, { ...fast, onError: () => {} }));
  try {
    return await Promise.all(
      ids.map((id) => queues[0].wait(id, { timeoutMs: 20_000 }).catch((e) => e.code)),
    );
  } finally {
    await Promise.all(workers.map((w) => w.shutdown()));
  }
}

test('a parent runs after its children and job.childrenResults() lists them', async () => {
  const { queue } = freshJobQueue(redis.url);
  const made = await queue.enqueueFlow(node('parent', { children: [node('a'), node('b'), node('c')] }));
  assert.deepEqual(made, { id: 'parent', created: true });
  const order = [];
  const results = {};
  const [out] = await runUntil([queue], ['parent'], async (job) => {
    order.push(job.id);
    results[job.id] = (await job.childrenResults()).map(seen).sort();
    return `${job.id}!`;
  });
  assert.equal(out, 'parent!');
  assert.equal(order.length, 4);
  assert.equal(order.at(-1), 'parent');
  const q = queue.name;
  const expected = [`${q}/a=completed:"a!"`, `${q}/b=completed:"b!"`, `${q}/c=completed:"c!"`];
  assert.deepEqual(results.parent, expected);
  assert.deepEqual(results.a, [], 'a job without children has no results');
  // The parent's record of them stays readable from the queue (with the parent's data).
  const after = await queue.childrenResults('parent');
  assert.deepEqual(after.map(seen).sort(), expected);
  assert.ok(Buffer.isBuffer(after[0].resultBytes));
  assert.equal(after[0].result, JSON.parse(after[0].resultBytes.toString()), 'result is the parsed JSON');
  assert.equal(after[0].error, null);
  assert.deepEqual(await queue.childrenResults('a'), []);
});

test('children go to another queue with queue:, and a grandchild back to the parent\'s', async () => {
  const { queue, client } = freshJobQueue(redis.url);
  const parts = new tideq.Queue(`${queue.name}-parts`, { client, shards: 2 });
  await queue.enqueueFlow(
    node('root', {
      children: [
        node('p1', { queue: parts }),
        // No queue of its own: its parent's (parts); its child goes back to the root's queue.
        node('mid', { queue: parts, children: [node('p2'), node('leaf', { queue })] }),
      ],
    }),
  );
  assert.equal(await queue.get('p1'), null);
  assert.deepEqual((await parts.get('p1')).parent, { queue: queue.name, id: 'root' });
  assert.deepEqual((await parts.get('p2')).parent, { queue: parts.name, id: 'mid' });
  assert.deepEqual((await queue.get('leaf')).parent, { queue: parts.name, id: 'mid' });
  const results = {};
  const [out] = await runUntil([queue, parts], ['root'], async (job) => {
    results[job.id] = (await job.childrenResults()).map((c) => `${c.queue}/${c.id}=${c.outcome}`).sort();
    return job.queue;
  });
  assert.equal(out, queue.name);
  assert.deepEqual(results.root, [`${parts.name}/mid=completed`, `${parts.name}/p1=completed`].sort());
  assert.deepEqual(results.mid, [`${queue.name}/leaf=completed`, `${parts.name}/p2=completed`].sort());
});

test('tasks in a flow: name and data (JSON or MessagePack) reach the handlers', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueFlow({
    name: 'report',
    data: { title: 'sums' },
    id: 'report',
    children: [
      { name: 'part', data: { n: 2 }, id: 'p2' },
      { name: 'part', data: { n: 3, raw: Buffer.from([7]) }, format: 'msgpack', id: 'p3' },
    ],
  });
  const info = await queue.get('p3');
  assert.equal(info.state, 'ready');
  const formats = {};
  const workers = queue.work(
    {
      part: (data, job) => {
        formats[job.id] = job.format;
        return data.n * 10 + (data.raw ? data.raw[0] : 0);
      },
      report: async (data, job) => {
        const parts = await job.childrenResults();
        const total = parts.reduce((sum, c) => sum + c.result, 0);
        return `${data.title}: ${total}`;
      },
    },
    fast,
  );
  try {
    assert.equal(await queue.wait('report', { timeoutMs: 20_000 }), 'sums: 57');
  } finally {
    await workers.shutdown();
  }
  assert.deepEqual(formats, { p2: 'json', p3: 'msgpack' });
});

test('onFailure values reach the core: fail (the default), ignore, continue', async () => {
  const { queue } = freshJobQueue(redis.url);
  const bad = (id, onFailure) => node(id, { maxAttempts: 1, ...(onFailure && { onFailure }) });
  await queue.enqueueFlow(node('failed', { children: [bad('bad1'), node('ok1')] }));
  await queue.enqueueFlow(node('explicit', { children: [bad('bad2', 'fail')] }));
  await queue.enqueueFlow(node('ignoring', { children: [bad('bad3', 'ignore'), node('ok3')] }));
  await queue.enqueueFlow(node('continuing', { children: [bad('bad4', 'continue'), node('ok4')] }));
  const results = {};
  const outs = await runUntil([queue], ['failed', 'explicit', 'ignoring', 'continuing'], async (job) => {
    results[job.id] = (await job.childrenResults()).map(seen).sort();
    if (job.id.startsWith('bad')) throw new Error(`${job.id} broke`);
    return 'done';
  });
  assert.deepEqual(outs, ['JOB_FAILED', 'JOB_FAILED', 'done', 'done']);
  for (const [parent, child] of [['failed', 'bad1'], ['explicit', 'bad2']]) {
    const info = await queue.get(parent);
    assert.equal(info.state, 'dead');
    assert.match(info.lastError, new RegExp(`child job ${child} of queue`));
    assert.equal(results[parent], undefined, `${parent} never ran`);
  }
  const q = queue.name;
  assert.deepEqual(results.ignoring, [`${q}/bad3=ignored:Error: bad3 broke`, `${q}/ok3=completed:"done"`]);
  assert.deepEqual(results.continuing, [`${q}/bad4=failed:Error: bad4 broke`, `${q}/ok4=completed:"done"`]);
});

test('get shows a waiting parent, its childrenPending, and each child\'s parent', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueFlow(node('parent', { children: [node('a'), node('b', { delayMs: 60_000 })] }));
  const parent = await queue.get('parent');
  assert.equal(parent.state, 'waiting');
  assert.equal(parent.childrenPending, 2);
  assert.equal(parent.parent, null);
  const a = await queue.get('a');
  assert.equal(a.state, 'ready');
  assert.deepEqual(a.parent, { queue: queue.name, id: 'parent' });
  assert.equal(a.childrenPending, null);
  assert.equal((await queue.get('b')).state, 'delayed');
  // A plain job is in no flow.
  await queue.enqueue(Buffer.from('x'), { id: 'plain' });
  const plain = await queue.get('plain');
  assert.deepEqual([plain.parent, plain.childrenPending], [null, null]);
  // One child completes; the next lease relays its notice to the parent.
  const [leased] = await queue.leaseJobs(1);
  assert.equal(leased.id, 'a');
  await queue.complete(leased);
  await queue.leaseJobs(1);
  assert.equal((await queue.get('parent')).childrenPending, 1);
  assert.deepEqual((await queue.childrenResults('parent')).map(seen), [`${queue.name}/a=completed`]);
  await rejectsWith(() => queue.childrenResults(''), 'INVALID_ARGUMENT');
  await rejectsWith(() => queue.childrenResults(7), 'INVALID_ARGUMENT', TypeError);
});

test('waiting parents are listed (jobs, jobsPage, findJobs), which the state could not be', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueFlow(node('p2', { children: [node('x', { delayMs: 60_000 })] }));
  await queue.enqueueFlow(node('p1', { children: [node('y', { delayMs: 60_000 })] }));
  assert.deepEqual((await queue.jobs('waiting')).map((j) => j.id), ['p1', 'p2']);
  const page = await queue.jobsPage('waiting', { limit: 1 });
  assert.deepEqual(page.jobs.map((j) => j.id), ['p1']);
  const rest = await queue.jobsPage('waiting', { cursor: page.cursor, limit: 10 });
  assert.deepEqual([rest.jobs.map((j) => j.id), rest.cursor], [['p2'], null]);
  const found = await queue.findJobs({ state: 'waiting' });
  assert.deepEqual(found.jobs.map((j) => j.id).sort(), ['p1', 'p2']);
});

test('cancel(parent) cancels its pending children, to any depth', async () => {
  const { queue, client } = freshJobQueue(redis.url);
  const other = new tideq.Queue(`${queue.name}-other`, { client });
  await queue.enqueueFlow(
    node('parent', {
      children: [
        node('later', { delayMs: 60_000 }),
        node('deep', { queue: other, children: [node('deeper')] }),
      ],
    }),
  );
  await queue.cancel('parent');
  assert.equal(await queue.get('parent'), null);
  assert.equal(await queue.get('later'), null);
  assert.equal(await other.get('deep'), null);
  assert.equal(await other.get('deeper'), null);
  const stats = await queue.stats();
  assert.deepEqual([stats.ready, stats.delayed, stats.cancelled], [0, 0, 2]);
  assert.equal((await other.stats()).cancelled, 2);
});

test('bad flows reject with INVALID_ARGUMENT and write nothing', async () => {
  const { queue, client, prefix } = freshJobQueue(redis.url);
  const capped = new tideq.CappedQueue(`${queue.name}-capped`, { client });
  const cases = [
    // [the flow, the error's class, its message]
    [{ name: 't', payload: Buffer.from('x') }, Error, /root has both name \(a task\) and payload/],
    [node('r', { children: [{}] }), TypeError, /root\.children\[0\] needs name/],
    [node('r', { children: [node('c', { queue: 'other' })] }), TypeError, /root\.children\[0\]\.queue must be a tideq Queue; got string/],
    [node('r', { queue: capped }), TypeError, /root\.queue must be a tideq Queue/],
    [node('r', { queue: client }), TypeError, /root\.queue must be a tideq Queue/],
    [node('r', { onFailure: 'retry' }), Error, /root\.onFailure must be 'fail', 'ignore' or 'continue'; got "retry"/],
    [node('r', { onFailure: true }), TypeError, /root\.onFailure must be a string/],
    [node('r', { children: [node('dup'), node('dup')] }), Error, /job id "dup" appears twice/],
    [node('r', { children: [node('c', { dedup: 'k' })] }), Error, /no dedup or debounce/],
    [node('r', { debounce: { key: 'k', delayMs: 10 } }), Error, /unknown option "debounce" in root;/],
    [node('r', { colour: 'red' }), Error, /unknown option "colour" in root;/],
    [node('r', { children: node('c') }), TypeError, /root\.children must be an array/],
    [node('r', { children: [Buffer.from('x')] }), TypeError, /root\.children\[0\] must be an object .*raw bytes/],
    [node('r', { children: [node('c', { children: [node('d', { payload: 'text' })] })] }), TypeError, /root\.children\[0\]\.children\[0\]\.payload must be a Buffer/],
    [node('r', { children: [node('c', { format: 'msgpack' })] }), Error, /root\.children\[0\]\.format applies to tasks/],
    [node('r', { children: [{ name: 't', format: 'xml' }] }), Error, /root\.children\[0\]\.format must be 'json' or 'msgpack'/],
    [node('bad id\n'), Error, /id/],
    [[node('r')], TypeError, /root must be an object/],
    [undefined, TypeError, /root must be an object .*got undefined/],
  ];
  // A cycle stops at the most jobs a flow may have; a deep job's name keeps its path's head.
  const cycle = node('r');
  cycle.children = [cycle];
  cases.push([cycle, Error, /a flow may have at most 100000 jobs/]);
  let deep = { payload: 'text' };
  for (let i = 0; i < 12; i++) deep = { payload: Buffer.from('x'), children: [deep] };
  const head = `root${'.children[0]'.repeat(8)}`;
  cases.push([deep, TypeError, new RegExp(`^${head.replace(/[.[\]]/g, '\\$&')}…children\\[0\\] \\(depth 12\\)\\.payload must be a Buffer`)]);
  for (const [flow, cls, message] of cases) {
    await rejectsWith(() => queue.enqueueFlow(flow), 'INVALID_ARGUMENT', cls, message);
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
  // A flow whose child id exists already (on another queue): refused, and the jobs written
  // before the refusal are dropped.
  const other = new tideq.Queue(`${queue.name}-other`, { client });
  await other.enqueue(Buffer.from('x'), { id: 'taken' });
  await rejectsWith(
    () => queue.enqueueFlow(node('r', { children: [node('fresh', { queue: other }), node('taken', { queue: other })] })),
    'INVALID_ARGUMENT',
    Error,
    /job id "taken" exists already/,
  );
  assert.equal(await queue.get('r'), null);
  assert.equal(await other.get('fresh'), null);
  assert.equal((await other.stats()).ready, 1);
  // A root whose id exists: nothing is written, created is false.
  await queue.enqueue(Buffer.from('x'), { id: 'root' });
  assert.deepEqual(
    await queue.enqueueFlow(node('root', { children: [node('kid', { queue: other })] })),
    { id: 'root', created: false },
  );
  assert.equal(await other.get('kid'), null);
});

test('the limit counts the jobs under the root: a chord of 100000 children and its callback is written', async () => {
  const { queue } = freshJobQueue(redis.url);
  const kids = Array.from({ length: 100_000 }, (_, i) => ({ name: 'part', data: i }));
  const made = await queue.enqueueFlow(tideq.chord(kids, { name: 'total', id: 'total' }));
  assert.deepEqual(made, { id: 'total', created: true });
  assert.equal((await queue.get('total')).childrenPending, 100_000);
  await rejectsWith(
    () => queue.enqueueFlow(tideq.chord([...kids, { name: 'part', data: -1 }], { name: 'total', id: 'over' })),
    'INVALID_ARGUMENT',
    Error,
    /a flow may have at most 100000 jobs under its root/,
  );
  assert.equal(await queue.get('over'), null);
});

test('enqueueMany refuses the keys only a flow has', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  for (const key of ['children', 'queue', 'onFailure']) {
    await rejectsWith(
      () => queue.enqueueMany([{ payload: Buffer.from('x'), [key]: key === 'children' ? [] : 'fail' }]),
      'INVALID_ARGUMENT',
      Error,
      new RegExp(`unknown option "${key}" in jobs\\[0\\]`),
    );
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), []);
});
