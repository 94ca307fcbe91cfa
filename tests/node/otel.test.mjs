// OpenTelemetry through the Node binding (lib/otel.js, applied by lib/index.js when
// @opentelemetry/api is installed): an enqueue carries the active span's W3C trace context in the job's envelope, and a
// worker runs each job handler in a consumer span `<queue> process` that continues it. An
// explicit `trace` option is carried as given; a malformed one is refused by the core. Without
// @opentelemetry/api, tideq loads and runs without loading any of it.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freshJobQueue, keysWithPrefix, rejectsWith, runNode, tideq, useRedis } from './harness.mjs';

const require = createRequire(import.meta.url);
const api = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const exporter = new InMemorySpanExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const tracer = api.trace.getTracer('otel-test');

const redis = useRedis();
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Runs `fn` inside an active span `name`; resolves with [what fn resolved with, the span's context]. */
async function inSpan(name, fn) {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      return [await fn(span), span.spanContext()];
    } finally {
      span.end();
    }
  });
}

/** The finished process spans of `queue`. */
const processSpans = (queue) => exporter.getFinishedSpans().filter((s) => s.name === `${queue.name} process`);
const parentOf = (span) => span.parentSpanContext?.spanId;

test('a job enqueued inside a span runs in a consumer span of that trace whose parent is the producer span, with the messaging attributes', async () => {
  const { queue } = freshJobQueue(redis.url);
  const [, producer] = await inSpan('produce', () => queue.enqueue(Buffer.from('x'), { id: 'j1' }));
  const seen = [];
  const stats = await queue.run(
    (job) => {
      seen.push({ trace: job.trace, active: api.trace.getActiveSpan()?.spanContext() });
    },
    drained,
  );
  assert.equal(stats.completed, 1);
  assert.match(seen[0].trace.traceparent, new RegExp(`^00-${producer.traceId}-${producer.spanId}-01$`));
  const [span] = processSpans(queue);
  assert.ok(span, 'a process span was exported');
  assert.equal(span.kind, api.SpanKind.CONSUMER);
  assert.equal(span.spanContext().traceId, producer.traceId);
  assert.equal(parentOf(span), producer.spanId);
  assert.equal(span.instrumentationScope.name, 'tideq');
  assert.deepEqual(span.attributes, {
    'messaging.system': 'tideq',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': queue.name,
    'messaging.message.id': 'j1',
    'tideq.attempt': 1,
  });
  assert.equal(span.status.code, api.SpanStatusCode.UNSET);
  assert.equal(seen[0].active.spanId, span.spanContext().spanId, 'the handler runs with the process span active');
});

test('a task job enqueued inside a span runs in a consumer span too, with tideq.task, its handler still called with (data, job)', async () => {
  const { queue } = freshJobQueue(redis.url);
  const [{ id }, producer] = await inSpan('produce', () => queue.enqueueTask('send-email', { to: 'ada' }));
  const calls = [];
  const handler = function (data, job) {
    calls.push({ data, job, args: arguments.length });
  };
  await queue.work({ 'send-email': handler }, drained).join();
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].data, { to: 'ada' });
  assert.ok(calls[0].job instanceof tideq.Job);
  assert.equal(calls[0].job.id, id);
  assert.equal(calls[0].args, 2);
  const [span] = processSpans(queue);
  assert.equal(span.spanContext().traceId, producer.traceId);
  assert.equal(parentOf(span), producer.spanId);
  assert.equal(span.attributes['tideq.task'], 'send-email');
  assert.equal(span.attributes['messaging.message.id'], id);
});

test('a throwing handler marks its span ERROR with the exception event, and the error fails the attempt unchanged', async () => {
  const { queue } = freshJobQueue(redis.url, { maxAttempts: 1 });
  await inSpan('produce', () => queue.enqueueMany([{ payload: Buffer.from('a'), id: 'sync' }, { payload: Buffer.from('b'), id: 'async' }]));
  const reported = [];
  const thrown = {};
  const stats = await queue
    .work(
      (job) => {
        const err = new RangeError(`boom ${job.id}`);
        thrown[job.id] = err;
        if (job.id === 'sync') throw err;
        return Promise.reject(err);
      },
      { ...drained, onError: (err, job) => reported.push([job.id, err]) },
    )
    .join();
  assert.equal(stats.failed, 2);
  assert.equal(reported.length, 2);
  for (const [id, err] of reported) assert.equal(err, thrown[id], 'onError gets the very error the handler threw');
  assert.equal((await queue.get('sync')).lastError, 'RangeError: boom sync');
  const spans = processSpans(queue);
  assert.equal(spans.length, 2);
  for (const span of spans) {
    const id = span.attributes['messaging.message.id'];
    assert.equal(span.status.code, api.SpanStatusCode.ERROR, id);
    assert.equal(span.status.message, `boom ${id}`);
    const [event] = span.events;
    assert.equal(event.name, 'exception');
    assert.equal(event.attributes['exception.type'], 'RangeError');
    assert.equal(event.attributes['exception.message'], `boom ${id}`);
    assert.ok(span.ended);
  }
});

test('a span made inside an async handler, after an await, is a child of the process span, which ends when the handler settles', async () => {
  const { queue } = freshJobQueue(redis.url);
  await inSpan('produce', () => queue.enqueue(Buffer.from('x'), { id: 'a1' }));
  let processEndedWhileRunning;
  await queue
    .work(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await tracer.startActiveSpan('inner', async (inner) => {
        await new Promise((resolve) => setImmediate(resolve));
        inner.end();
      });
      processEndedWhileRunning = processSpans(queue).length > 0;
    }, drained)
    .join();
  assert.equal(processEndedWhileRunning, false, 'the process span was still open while the handler ran');
  const [process] = processSpans(queue);
  const inner = exporter.getFinishedSpans().find((s) => s.name === 'inner' && s.spanContext().traceId === process.spanContext().traceId);
  assert.ok(inner, 'the inner span is in the job trace');
  assert.equal(parentOf(inner), process.spanContext().spanId);
});

test('an enqueue outside any span carries no trace: job.trace is null and the process span is a root', async () => {
  const { queue } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'plain' });
  await queue.enqueueTask('task', 1, { id: 'plain-task' });
  await queue.enqueueMany([Buffer.from('y'), { name: 'task', data: 2, id: 'many' }]);
  const traces = [];
  await queue.work((job) => void traces.push(job.trace), drained).join();
  assert.deepEqual(traces, [null, null, null, null]);
  const spans = processSpans(queue);
  assert.equal(spans.length, 4);
  for (const span of spans) assert.equal(parentOf(span), undefined);
});

test('an explicit trace is carried as given and wins over the active span', async () => {
  const { queue } = freshJobQueue(redis.url);
  const given = { traceparent: TRACEPARENT, tracestate: 'congo=t61rcWkgMzE' };
  await inSpan('produce', async () => {
    await queue.enqueue(Buffer.from('x'), { id: 'raw', trace: given });
    await queue.enqueueTask('task', null, { id: 'task', trace: { traceparent: TRACEPARENT } });
    await queue.enqueueMany([{ payload: Buffer.from('y'), id: 'many', trace: given }]);
  });
  const traces = {};
  await queue.work((job) => void (traces[job.id] = job.trace), drained).join();
  assert.deepEqual(traces, { raw: given, task: { traceparent: TRACEPARENT }, many: given });
  const spans = processSpans(queue);
  assert.equal(spans.length, 3);
  for (const span of spans) {
    assert.equal(span.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(parentOf(span), '00f067aa0ba902b7');
  }
});

test('enqueueMany injects the active span once per call into every job without a trace: tasks, raw jobs and bare Buffers', async () => {
  const { queue } = freshJobQueue(redis.url);
  const [, producer] = await inSpan('produce', () =>
    queue.enqueueMany([{ name: 'task', data: 1, id: 't' }, { payload: Buffer.from('p'), id: 'p' }, Buffer.from('bare'), { name: 'task', data: 2, id: 'own', trace: { traceparent: TRACEPARENT } }]),
  );
  const traces = [];
  await queue.work((job) => void traces.push([job.id === 'own' ? 'own' : job.payload.toString() === 'bare' ? 'bare' : job.id, job.trace?.traceparent]), drained).join();
  const expected = `00-${producer.traceId}-${producer.spanId}-01`;
  assert.deepEqual(
    traces.sort(),
    [
      ['bare', expected],
      ['own', TRACEPARENT],
      ['p', expected],
      ['t', expected],
    ],
  );
});

test('enqueueFlow injects the active span into every job of the flow without a trace, leaving the caller\'s tree as it was', async () => {
  const { queue } = freshJobQueue(redis.url);
  const flow = {
    payload: Buffer.from('root'),
    id: 'root',
    children: [
      { payload: Buffer.from('a'), id: 'a', children: [{ payload: Buffer.from('deep'), id: 'deep' }] },
      { payload: Buffer.from('own'), id: 'own', trace: { traceparent: TRACEPARENT } },
    ],
  };
  const [, producer] = await inSpan('produce', () => queue.enqueueFlow(flow));
  assert.equal(flow.trace, undefined, 'the caller\'s objects are not changed');
  assert.equal(flow.children[0].children[0].trace, undefined);
  const traces = [];
  await queue.work((job) => void traces.push([job.id, job.trace?.traceparent]), drained).join();
  const expected = `00-${producer.traceId}-${producer.spanId}-01`;
  assert.deepEqual(traces.sort(), [
    ['a', expected],
    ['deep', expected],
    ['own', TRACEPARENT],
    ['root', expected],
  ]);
});

test('malformed trace values reject with INVALID_ARGUMENT and write nothing', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const tp = (s) => ({ traceparent: s });
  const bad = [
    {},
    { tracestate: 'a=b' },
    tp('not a traceparent'),
    tp('00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'),
    tp('00-00000000000000000000000000000000-00f067aa0ba902b7-01'),
    tp('00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'),
    tp('ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
    { traceparent: TRACEPARENT, baggage: 'k=v' },
    { traceparent: TRACEPARENT, tracestate: 'x'.repeat(1024) },
  ];
  for (const trace of bad) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { trace }), 'INVALID_ARGUMENT', Error, /trace/);
    await rejectsWith(() => queue.enqueueTask('task', 1, { trace }), 'INVALID_ARGUMENT', Error, /trace/);
    await rejectsWith(() => queue.enqueueMany([{ name: 'ok', data: 1 }, { name: 'task', data: 1, trace }]), 'INVALID_ARGUMENT', Error, /trace/);
    // Inside a span too: a given trace is never replaced by the active span's.
    await inSpan('produce', () => rejectsWith(() => queue.enqueue(Buffer.from('x'), { trace }), 'INVALID_ARGUMENT', Error, /trace/));
  }
  for (const trace of ['00-...', [TRACEPARENT], { traceparent: 42 }, { traceparent: TRACEPARENT, tracestate: null }]) {
    await rejectsWith(() => queue.enqueue(Buffer.from('x'), { trace }), 'INVALID_ARGUMENT', TypeError, /trace/);
  }
  assert.deepEqual(await keysWithPrefix(redis.url, prefix), [], 'nothing was written');
});

test('batch handlers run without a process span', async () => {
  const { queue } = freshJobQueue(redis.url);
  await inSpan('produce', () => queue.enqueueMany([Buffer.from('a'), Buffer.from('b')]));
  let traced = 0;
  await queue.workBatches((jobs) => void (traced += jobs.filter((j) => j.trace !== null).length), { size: 2, ...drained }).join();
  assert.equal(traced, 2, 'the jobs carry the producer trace');
  assert.equal(processSpans(queue).length, 0);
});

test('without OpenTelemetry installed, tideq loads, enqueues and runs a job, and loads no @opentelemetry module', async () => {
  const { code, stdout, stderr } = await runNode(['--require', join(ROOT, 'tests/node/no_otel_hook.cjs'), join(ROOT, 'tests/node/no_otel_child.cjs'), redis.url]);
  assert.equal(code, 0, stderr);
  const got = JSON.parse(stdout.trim().split('\n').pop());
  assert.ok(got.refused.includes('@opentelemetry/api'), `otel.js tried to load @opentelemetry/api and was refused: ${JSON.stringify(got.refused)}`);
  assert.deepEqual(got.otelModules, [], 'no @opentelemetry module in require.cache');
  assert.equal(got.nativeEnqueue, true, 'Queue.prototype.enqueue is the addon method, unwrapped');
  assert.equal(got.completed, 2);
  assert.deepEqual(got.traces, { plain: null, given: { traceparent: TRACEPARENT } }, 'an explicit trace is still carried');
});

test('with @opentelemetry/api installed but no SDK registered, a worker makes no OpenTelemetry call per job; one started after an SDK registers traces its jobs', async () => {
  const { code, stdout, stderr } = await runNode([join(ROOT, 'tests/node/otel_api_only_child.cjs'), redis.url]);
  assert.equal(code, 0, stderr);
  const got = JSON.parse(stdout.trim().split('\n').pop());
  assert.deepEqual(got, { completed: [50, 5], extractsWithoutProvider: 0, extractsWithProvider: 5, spans: 5 });
});
