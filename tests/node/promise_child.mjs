// Child process of promises.test.mjs. Usage: node promise_child.mjs MODE URL QUEUE
// - pending: nothing but one pending call (a wait that times out after 1.5 s) may keep the
//   process alive; prints "settled <code>" when it settles.
// - idle: one call, then nothing pending: the process must exit by itself; prints "done".
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const tideq = require('../../lib/index.js');

const [mode, url, name] = process.argv.slice(2);
const queue = new tideq.Queue(name, { url });
const { id } = await queue.enqueue(Buffer.from('x'));
if (mode === 'pending') {
  queue.wait(id, { timeoutMs: 1500 }).then(
    () => console.log('settled ok'),
    (e) => console.log(`settled ${e.code}`),
  );
} else {
  console.log('done');
}
