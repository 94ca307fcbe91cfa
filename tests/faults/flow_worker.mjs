// Used by flow_kills.py: `node flow_worker.mjs URL QUEUE LEDGER` runs task `part` (its data i,
// its result 2*i) on the 4-shard queue QUEUE, appending "done <id>" to LEDGER for each run,
// until it is killed.
import { openSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');

const [url, queue, ledger] = process.argv.slice(2);
const fd = openSync(ledger, 'a');
const parts = new Queue(queue, { url, shards: 4 });
const worker = parts.work(
  {
    part: (i, job) => {
      writeSync(fd, `done ${job.id}\n`);
      return i * 2;
    },
  },
  { concurrency: 8, leaseMs: 1000 },
);
await worker.join();
