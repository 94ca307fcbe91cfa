// A Node worker for `make scale`: runs every job of queue NAME (SHARDS shards) at URL with a
// no-op handler until SIGTERM, then prints its stats as JSON.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue } = require('../../lib/index.js');
const [url, name, shards, concurrency] = process.argv.slice(2);
const q = new Queue(name, { url, shards: Number(shards) });
console.log('ready');
const stats = await q.run(() => {}, { concurrency: Number(concurrency), pollIntervalMs: 1000 });
console.log(JSON.stringify({ completed: stats.completed, failed: stats.failed }));
