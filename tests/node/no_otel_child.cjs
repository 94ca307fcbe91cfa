// Child of otel.test.mjs, run with no_otel_hook.cjs (no @opentelemetry package resolves): loads
// tideq, enqueues two jobs (one with an explicit trace), runs them, and prints one JSON line with
// what it saw, including the @opentelemetry modules in require.cache (there should be none).
'use strict';
const { join } = require('node:path');

const { Client, Queue } = require(join(__dirname, '..', '..', 'lib', 'index.js'));

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

async function main() {
  const prefix = `no-otel-${process.pid}`;
  const queue = new Queue(`q-${process.pid}`, { client: new Client({ url: process.argv[2], prefix }) });
  await queue.enqueue(Buffer.from('x'), { id: 'plain' });
  await queue.enqueueTask('task', 1, { id: 'given', trace: { traceparent: TRACEPARENT } });
  const traces = {};
  const stats = await queue.run((job) => void (traces[job.id] = job.trace), { stopWhenDrained: true, pollIntervalMs: 100 });
  console.log(
    JSON.stringify({
      refused: globalThis.__tideqRefused,
      otelModules: Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')),
      nativeEnqueue: /\[native code\]/.test(Function.prototype.toString.call(Queue.prototype.enqueue)),
      completed: stats.completed,
      traces,
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
