// Used by test_interop.py: `node interop_jobs.mjs enqueue|work URL QUEUE [HEX...]` mirrors the Rust
// example `interop`: enqueue takes hex payloads; work drains the queue (concurrency 1) and prints
// each payload as a hex line, in processing order (TIDEQ_INTEROP_KEY: encrypted).
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');

const [verb, url, queue, ...rest] = process.argv.slice(2);
// TIDEQ_INTEROP_KEY="<key id>=<hex key>": the queue encrypts with that key.
const keyLine = process.env.TIDEQ_INTEROP_KEY;
const encryption = keyLine
  ? { currentKey: keyLine.split('=')[0], keys: { [keyLine.split('=')[0]]: Buffer.from(keyLine.split('=')[1], 'hex') } }
  : undefined;
const q = new Queue(queue, { url, encryption });
if (verb === 'enqueue') {
  await q.enqueueMany(rest.map((h) => ({ payload: Buffer.from(h, 'hex') })));
} else if (verb === 'work') {
  const seen = [];
  const w = q.work((job) => { seen.push(Buffer.from(job.payload).toString('hex')); }, { concurrency: 1, stopWhenDrained: true });
  await w.join();
  for (const h of seen) console.log(h);
} else {
  throw new Error(`unknown verb ${verb}`);
}
