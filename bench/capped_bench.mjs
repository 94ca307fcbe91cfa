// Capped queue throughput from Node: `node bench/capped_bench.mjs URL N`. Prints ONE JSON line,
// items per second per operation (the Rust bench, `make bench`, reads it):
// {"runtime":"node","push_seq":..,"push_concurrent":..,"push_many":..,"pop_batch":..,"next_batch":..}
// Items are 64 bytes. Run against a Redis you can write to: keys go under a private prefix.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, CappedQueue } = require('../lib/index.js');

const [url = process.env.TIDEQ_REDIS_URL || 'redis://127.0.0.1:6379', nArg = '100000'] = process.argv.slice(2);
const n = Number(nArg);
if (!Number.isInteger(n) || n < 10) throw new Error(`N must be an integer >= 10, got ${nArg}`);

const client = new Client({ url, prefix: `bench-node-${process.pid}` });
const queue = new CappedQueue('bench', { client, capacity: 2 * n, ttlMs: 600_000 });
const item = Buffer.alloc(64, 'x');
const result = { runtime: 'node' };
const rate = (count, t0) => Math.round(count / ((performance.now() - t0) / 1000));

async function pushAll(pairs) {
  for (let i = 0; i < pairs.length; i += 10_000) await queue.pushMany(pairs.slice(i, i + 10_000));
}

// push, one awaited call after another.
const seq = Math.floor(n / 10);
let t0 = performance.now();
for (let i = 0; i < seq; i++) await queue.push(`g${i % 1000}`, item);
result.push_seq = rate(seq, t0);

// push with 256 calls in flight.
t0 = performance.now();
for (let i = 0; i < seq; i += 256) {
  const window = [];
  for (let k = i; k < Math.min(i + 256, seq); k++) window.push(queue.push(`g${k % 1000}`, item));
  await Promise.all(window);
}
result.push_concurrent = rate(seq, t0);

// pushMany: N items over 1000 groups, 10 000 per call.
const spread = Array.from({ length: n }, (_, i) => [`m${i % 1000}`, item]);
t0 = performance.now();
await pushAll(spread);
result.push_many = rate(n, t0);

// popBatch(128) draining one group holding N items.
await pushAll(Array.from({ length: n }, () => ['one', item]));
t0 = performance.now();
let got = 0;
for (;;) {
  const batch = await queue.popBatch('one', 128);
  if (batch.length === 0) break;
  got += batch.length;
}
result.pop_batch = rate(got, t0);

// nextBatch(128) draining N items over 100 groups (after the groups left by the steps above).
while (await queue.nextBatch(1000)) {}
await pushAll(Array.from({ length: n }, (_, i) => [`s${i % 100}`, item]));
t0 = performance.now();
got = 0;
for (let b; (b = await queue.nextBatch(128)); ) got += b.items.length;
result.next_batch = rate(got, t0);

if (got !== n) throw new Error(`next_batch drained ${got} items, expected ${n}`);
console.log(JSON.stringify(result));
