// Fault-suite adapter, Node side (same arguments and ledger lines as adapter.py):
//   node adapter.mjs producer URL QUEUE LEDGER PREFIX N SECONDS
//   node adapter.mjs worker URL QUEUE LEDGER LEASE_MS CONCURRENCY
import { openSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';

const { Queue } = createRequire(import.meta.url)('../../lib/index.js');
const [kind, url, queue, path, a, b, seconds] = process.argv.slice(2);
const fd = openSync(path, 'a');
const write = (line) => writeSync(fd, `${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (kind === 'producer') {
  const q = new Queue(queue, { url });
  for (let i = 0; i < Number(b); i++) {
    const id = `${a}-${i}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await q.enqueue(Buffer.from(id), { id });
        write(`acked ${id}`);
        break;
      } catch {
        if (Date.now() > deadline) {
          write(`gave_up ${id}`);
          break;
        }
        await sleep(50);
      }
    }
    await sleep(Math.random() * 2000 * Number(seconds) / Number(b));
  }
} else {
  const q = new Queue(queue, { url });
  await q.run(
    async (job) => {
      write(`done ${job.id}`);
      await sleep(Math.random() * 5);
    },
    { concurrency: Number(b), leaseMs: Number(a), graceMs: 2000, onError: () => {} },
  );
}
