// Used by test_interop.py: `node interop_tasks.mjs enqueue-task URL QUEUE NAME json|msgpack JSON...`
// enqueues one task per JSON argument value; `node interop_tasks.mjs work-tasks URL QUEUE NAME` runs
// task NAME until the queue is drained and prints each job's arguments as one JSON line. Mirrors
// the Rust example `interop`.
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');

const [verb, url, queue, name, ...rest] = process.argv.slice(2);
const q = new Queue(queue, { url });
if (verb === 'enqueue-task') {
  const [format, ...values] = rest;
  for (const v of values) await q.enqueueTask(name, JSON.parse(v), { format });
} else if (verb === 'work-tasks') {
  const seen = [];
  const w = q.work({ [name]: (data) => { seen.push(JSON.stringify(data)); } }, { concurrency: 1, stopWhenDrained: true });
  await w.join();
  for (const line of seen) console.log(line);
} else {
  throw new Error(`unknown verb ${verb}`);
}
