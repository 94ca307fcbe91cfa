// Used by test_interop.py: `node interop_results.mjs work URL QUEUE` runs a worker until the queue
// is drained, each job returning { from: 'node', echo: <payload text> } after reporting progress
// { step: 1 } (a job whose id ends in "-raw" returns the payload as a Buffer instead);
// `node interop_results.mjs wait URL QUEUE ID` waits for job ID and prints its result and its
// `get` progress as one JSON line.
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');

const [verb, url, queue, id] = process.argv.slice(2);
const q = new Queue(queue, { url });
if (verb === 'work') {
  const w = q.work(async (job) => {
    await job.progress({ step: 1 });
    return job.id.endsWith('-raw') ? job.payload : { from: 'node', echo: job.text() };
  }, { stopWhenDrained: true, pollIntervalMs: 50 });
  await w.join();
} else if (verb === 'wait') {
  const result = await q.wait(id, { timeoutMs: 20000 });
  const info = await q.get(id);
  console.log(JSON.stringify({ result, progress: info.progress }));
} else {
  throw new Error(`unknown verb ${verb}`);
}
