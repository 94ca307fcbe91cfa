// Child processes for process.test.mjs: `node child.mjs MODE URL QUEUE`. Each mode prints
// progress lines on stdout that the parent waits for.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { CappedQueue } = require('../../lib/index.js');
const [mode, url, name] = process.argv.slice(2);
const queue = new CappedQueue(name, { url });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

if (mode === 'shutdown') {
  // Consume one item, shut down, and let the process end by itself.
  let got = 0;
  const consumer = queue.consume(() => {
    got++;
  });
  await queue.push('g', 'x');
  while (got === 0) await sleep(5);
  console.log(JSON.stringify(await consumer.shutdown()));
} else if (mode === 'run') {
  // run() until a signal; a handler is running (slow) when the signal comes.
  const stats = queue.run(
    async (group, items) => {
      console.log(`handling ${items.length}`);
      await sleep(300);
      console.log('handled');
    },
    { graceMs: 5_000 },
  );
  await queue.push('g', 'x');
  console.log('ready');
  console.log(`stats ${JSON.stringify(await stats)}`);
} else if (mode === 'idle') {
  // A consumer that is never stopped: the process must stay alive.
  queue.consume(() => {});
  console.log('ready');
} else if (mode === 'throws') {
  // No onError: the failure is printed with console.error, stack included.
  await queue.push('g', 'x');
  const consumer = queue.consume(
    function brokenHandler() {
      throw new Error('boom from the handler');
    },
    { stopWhenEmpty: true },
  );
  console.log(JSON.stringify(await consumer.join()));
} else {
  throw new Error(`unknown mode ${mode}`);
}
