// Used by the cross-language trace test (test_interop.py), and by hand. Both modes set up
// OpenTelemetry globally first: a tracer provider exporting to memory, the async-hooks context
// manager and the W3C Trace Context propagator.
//
// `node interop_otel.mjs produce URL QUEUE JOB_ID` enqueues one raw job with that id inside an
// active span and prints that span as one JSON line: {"traceId": "<32 hex>", "spanId": "<16 hex>"}.
//
// `node interop_otel.mjs work URL QUEUE` runs a worker until the queue is drained, then prints one
// JSON line per finished process span:
// {"name": "<queue> process", "traceId": ..., "parentSpanId": ... (null for none), "kind": "CONSUMER", "jobId": ...}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const api = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Queue } = require('../../lib/index.js');

const exporter = new InMemorySpanExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const [mode, url, queue, jobId] = process.argv.slice(2);
if (!['produce', 'work'].includes(mode) || !url || !queue || (mode === 'produce' && !jobId)) {
  console.error('usage: interop_otel.mjs produce URL QUEUE JOB_ID | work URL QUEUE');
  process.exit(2);
}
const q = new Queue(queue, { url });

if (mode === 'produce') {
  const tracer = api.trace.getTracer('interop-otel');
  const { traceId, spanId } = await tracer.startActiveSpan('produce', async (span) => {
    try {
      await q.enqueue(Buffer.from('{}'), { id: jobId });
      return span.spanContext();
    } finally {
      span.end();
    }
  });
  console.log(JSON.stringify({ traceId, spanId }));
} else {
  await q.run(() => {}, { stopWhenDrained: true, pollIntervalMs: 100 });
  for (const s of exporter.getFinishedSpans()) {
    if (s.attributes['messaging.operation.type'] !== 'process') continue;
    // sdk-trace-base 2.x: parentSpanContext (1.x had parentSpanId).
    const parentSpanId = s.parentSpanContext?.spanId ?? s.parentSpanId ?? null;
    console.log(
      JSON.stringify({
        name: s.name,
        traceId: s.spanContext().traceId,
        parentSpanId,
        kind: api.SpanKind[s.kind],
        jobId: s.attributes['messaging.message.id'],
      }),
    );
  }
}
