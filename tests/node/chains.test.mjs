// Chains and chords through the Node binding (chain, chord), against a real redis-server: each
// link gets the previous result as its data, a chord's callback the array of its children's
// results, job.argsFrom says so, and bad input throws with nothing written. The deep promises are
// core/tests/chains.rs's; these check the binding.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const fast = { pollIntervalMs: 50, concurrency: 4, onError: () => {} };

/** Runs `handler` on each queue until job `id` of `queues[0]` finished; resolves with its result. */
async function runUntil(queues, id, handler) {
  const workers = queues.map((q) => q.work(handler, fast));
  try {
    return await queues[0].wait(id, { timeoutMs: 20_000 });
  } finally {
    await Promise.all(workers.map((w) => w.shutdown()));
  }
}

test('a chain gives each link the previous result as its data', async () => {
  const { queue, client } = freshJobQueue(redis.url);
  const other = new tideq.Queue(`${queue.name}-other`, { client, shards: 2 });
  const seen = [];
  const tasks = {
    fetch: (url) => {
      seen.push(['fetch', url]);
      return { url, body: 'a b c' };
    },
    parse: (page) => {
      seen.push(['parse', page]);
      return page.body.split(' ');
    },
    count: (words, job) => {
      seen.push(['count', words, job.argsFrom]);
      return words.length;
    },
  };
  const flow = tideq.chain([
    { name: 'fetch', data: 'https://example.com' },
    { name: 'parse', queue: other },
    { name: 'count', id: 'count' },
  ]);
  assert.ok(flow instanceof tideq.Flow);
  const made = await queue.enqueueFlow(flow);
  assert.equal(made.id, 'count');
  assert.equal(await runUntil([queue, other], 'count', tasks), 3);
  assert.deepEqual(seen, [
    ['fetch', 'https://example.com'],
    ['parse', { url: 'https://example.com', body: 'a b c' }],
    ['count', ['a', 'b', 'c'], 'previous'],
  ]);
});

test('a chord callback gets the array of results in the children’s order, once', async () => {
  const { queue } = freshJobQueue(redis.url);
  const calls = [];
  const kids = [0, 1, 2, 3, 4].map((n) => ({ name: 'square', data: n }));
  await queue.enqueueFlow(tideq.chord(kids, { name: 'total', id: 't' }));
  const info = await queue.get('t');
  assert.equal(info.state, 'waiting');
  const total = await runUntil([queue], 't', {
    square: (n) => n * n,
    total: (all, job) => {
      calls.push([all, job.argsFrom]);
      return all.reduce((a, b) => a + b, 0);
    },
  });
  assert.equal(total, 30);
  assert.deepEqual(calls, [[[0, 1, 4, 9, 16], 'children']]);
});

test('a chord can start a chain and a chain can be a chord’s child', async () => {
  const { queue } = freshJobQueue(redis.url);
  const inner = tideq.chain([{ name: 'num', data: 10 }, { name: 'addOne' }]);
  await queue.enqueueFlow(
    tideq.chain([tideq.chord([inner, { name: 'num', data: 5 }], { name: 'total' }), { name: 'addOne', id: 'end' }]),
  );
  const end = await runUntil([queue], 'end', {
    num: (n) => n,
    addOne: (n) => n + 1,
    total: (ns) => ns.reduce((a, b) => a + b, 0),
  });
  assert.equal(end, 17);
});

test('a raw chain passes each result on as the next payload', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueueFlow(
    tideq.chain([{ payload: Buffer.from('a') }, { payload: Buffer.alloc(0) }, { payload: Buffer.alloc(0), id: 'z' }]),
  );
  const out = await runUntil([queue], 'z', (job) => Buffer.concat([job.payload, Buffer.from('+')]));
  assert.deepEqual(out, Buffer.from('a+++'));
});

test('chains and chords refuse links that would lose their data, writing nothing', async () => {
  const { queue } = freshJobQueue(redis.url);
  const code = (fn) => {
    try {
      fn();
    } catch (e) {
      return [e.code, e.message];
    }
    return ['no error'];
  };
  const [c1, m1] = code(() => tideq.chain([]));
  assert.equal(c1, 'INVALID_ARGUMENT');
  assert.match(m1, /at least one link/);
  const [c2, m2] = code(() => tideq.chain([{ name: 'a' }, { name: 'b', data: 1 }]));
  assert.equal(c2, 'INVALID_ARGUMENT');
  assert.match(m2, /chain link 2 \(task "b"\) has arguments/);
  const [c3, m3] = code(() => tideq.chain([{ name: 'a' }, { name: 'b', children: [{ name: 'c' }] }]));
  assert.equal(c3, 'INVALID_ARGUMENT');
  assert.match(m3, /children of its own/);
  const [c4, m4] = code(() => tideq.chord([{ name: 'a' }], { payload: Buffer.from('x') }));
  assert.equal(c4, 'INVALID_ARGUMENT');
  assert.match(m4, /callback \(a raw job\) has arguments/);
  const [c5, m5] = code(() => tideq.chain([{ name: 'a' }, 'b']));
  assert.equal(c5, 'INVALID_ARGUMENT');
  assert.match(m5, /links\[1\] must be an object/);
  const [c6] = code(() => tideq.chord({ name: 'a' }, { name: 'b' }));
  assert.equal(c6, 'INVALID_ARGUMENT');
  assert.equal((await queue.stats()).enqueued, 0);
});
