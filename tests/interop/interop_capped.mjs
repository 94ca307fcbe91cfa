// Used by test_interop.py: `node interop_capped.mjs push|pop URL QUEUE GROUP ...` mirrors the
// Rust example `interop`: push takes hex items, pop prints each popped item as a hex line.
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { CappedQueue } = require('../../lib/index.js');

const [verb, url, queue, group, ...rest] = process.argv.slice(2);
const q = new CappedQueue(queue, { url });
if (verb === 'push') {
  await q.pushMany(rest.map((h) => [group, Buffer.from(h, 'hex')]));
} else if (verb === 'pop') {
  for (const item of await q.popBatch(group, Number(rest[0]))) console.log(item.toString('hex'));
} else {
  throw new Error(`unknown verb ${verb}`);
}
