// Used by test_interop.py: `node interop_capped.mjs push|pop URL QUEUE GROUP ...` mirrors the
// Rust example `interop`: push takes hex items, pop prints each popped item as a hex line
// (TIDEQ_INTEROP_KEY="<key id>=<hex key>": the queue encrypts with that key).
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { CappedQueue } = require('../../lib/index.js');

const [verb, url, queue, group, ...rest] = process.argv.slice(2);
const keyLine = process.env.TIDEQ_INTEROP_KEY;
const encryption = keyLine
  ? { currentKey: keyLine.split('=')[0], keys: { [keyLine.split('=')[0]]: Buffer.from(keyLine.split('=')[1], 'hex') } }
  : undefined;
const q = new CappedQueue(queue, { url, encryption });
if (verb === 'push') {
  await q.pushMany(rest.map((h) => [group, Buffer.from(h, 'hex')]));
} else if (verb === 'pop') {
  for (const item of await q.popBatch(group, Number(rest[0]))) console.log(item.toString('hex'));
} else {
  throw new Error(`unknown verb ${verb}`);
}
