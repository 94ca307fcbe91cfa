// Child of otel.test.mjs: @opentelemetry/api is installed but no SDK registered a tracer provider
// (as in many services that never turned tracing on). Runs a worker, counting the OpenTelemetry
// calls made per job (none should be: the handler runs as it is), then registers a provider and
// runs another worker (whose jobs run in spans). Prints one JSON line with what it saw.
'use strict';
const { join } = require('node:path');

const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Client, Queue } = require(join(__dirname, '..', '..', 'lib', 'index.js'));

let extracts = 0;
const extract = api.propagation.extract.bind(api.propagation);
api.propagation.extract = (...args) => {
  extracts += 1;
  return extract(...args);
};

async function main() {
  const client = new Client({ url: process.argv[2], prefix: `api-only-${process.pid}` });
  const queue = new Queue(`q-${process.pid}`, { client });
  const opts = { stopWhenDrained: true, pollIntervalMs: 100 };
  const handler = () => {};
  // Each job carries a trace context (a traced job's wrapper extracts it once: counted).
  const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  await queue.enqueueMany(Array.from({ length: 50 }, () => ({ payload: Buffer.from('x'), trace })));
  const before = await queue.run(handler, opts);
  const withoutProvider = extracts;

  const exporter = new InMemorySpanExporter();
  api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  await queue.enqueueMany(Array.from({ length: 5 }, () => ({ payload: Buffer.from('x'), trace })));
  const after = await queue.run(handler, opts);
  console.log(
    JSON.stringify({
      completed: [before.completed, after.completed],
      extractsWithoutProvider: withoutProvider,
      extractsWithProvider: extracts - withoutProvider,
      spans: exporter.getFinishedSpans().length,
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
