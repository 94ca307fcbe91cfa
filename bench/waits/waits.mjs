// `make bench-waits`, Node side: N concurrent waits on queue NAME at URL for jobs w0..w<N-1>,
// whose handlers return the µs they finished at. Prints "ready", then one JSON line: how many
// waits were answered, p50/p99/max ms from a job's finish to its wait's return, and the longest
// of 20 waits with a 50 ms timeout.
import { Queue } from '../../lib/index.js';

const [url, name, n] = [process.argv[2], process.argv[3], Number(process.argv[4])];
const queue = new Queue(name, { url });
const idle = new Queue(`${name}-idle`, { url });
const lat = [];
const nowUs = () => Number(process.hrtime.bigint() / 1000n) - hrOffsetUs;
// hrtime to epoch µs, so it compares with the handler's clock.
const hrOffsetUs = Number(process.hrtime.bigint() / 1000n) - Date.now() * 1000;

const waits = [];
for (let i = 0; i < n; i++) {
  waits.push(queue.wait(`w${i}`, { timeoutMs: 120_000 }).then((done) => lat.push((nowUs() - Number(done)) / 1000)));
}
console.log('ready');
await Promise.all(waits);
lat.sort((a, b) => a - b);
let longest = 0;
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  await idle.wait('never', { timeoutMs: 50 }).catch(() => {});
  longest = Math.max(longest, performance.now() - t);
}
const pick = (p) => lat[Math.round((lat.length - 1) * p)];
console.log(JSON.stringify({ ok: lat.length, p50: pick(0.5), p99: pick(0.99), max: lat[lat.length - 1], timeout_50ms: longest }));
process.exit(0);
