// Used by test_interop.py: `node interop_flows.mjs enqueue-flow URL QUEUE` enqueues the interop
// flow (a chord of `square` 1..4 on the 4-shard queue QUEUE-parts whose `sum` callback starts a
// chain ending in `describe`, id "end"); `node interop_flows.mjs work-flow URL QUEUE` runs those
// tasks on both queues until "end" finished and prints its result as one JSON line. Mirrors the
// Rust example `interop`.
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Queue, chain, chord } = require('../../lib/index.js');

const [verb, url, queue] = process.argv.slice(2);
const q = new Queue(queue, { url });
const parts = new Queue(`${queue}-parts`, { url, shards: 4 });
if (verb === 'enqueue-flow') {
  const squares = [1, 2, 3, 4].map((n) => ({ name: 'square', data: n, queue: parts }));
  await q.enqueueFlow(chain([chord(squares, { name: 'sum' }), { name: 'describe', id: 'end' }]));
} else if (verb === 'work-flow') {
  const tasks = {
    square: (n) => n * n,
    sum: (all) => all.reduce((a, b) => a + b, 0),
    describe: (total) => ({ total, runtime: 'node' }),
  };
  const workers = [q.work(tasks), parts.work(tasks)];
  try {
    console.log(JSON.stringify(await q.wait('end', { timeoutMs: 30_000 })));
  } finally {
    await Promise.all(workers.map((w) => w.shutdown()));
  }
} else {
  throw new Error(`unknown verb ${verb}`);
}
