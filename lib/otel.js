// OpenTelemetry for tideq's Node binding, in JS because the host's OpenTelemetry lives in JS.
// `index.js` calls `instrument(binding)` once, when the package is loaded. When
// `@opentelemetry/api` (an optional peer dependency) cannot be loaded, nothing is changed and
// nothing else is loaded. Otherwise `Queue`'s methods are wrapped:
// - producer: `enqueue`, `enqueueTask`, `enqueueMany` and `enqueueFlow` (each job of the flow)
//   carry the active span's trace context (W3C
//   `traceparent`/`tracestate`, injected with the global propagator) in the job's `trace` when
//   the caller gave none; the core validates and stores it in the job's envelope;
// - worker: `work` and `run` run each job handler (a single handler, or each task handler) inside
//   a consumer span `<queue> process` whose parent is the job's trace context, so spans the
//   handler makes are its children; a throw or rejection records the exception and sets the
//   span's status to ERROR, then propagates unchanged. Only when a tracer provider is
//   registered (an SDK is set up) when the worker starts: with the API alone the spans would be
//   no-ops, and the handlers run as they are. Batch handlers (`workBatches`, `runBatches`) are
//   not wrapped.
'use strict';

const { isPromise } = require('node:util').types;

/** The core's checks on a trace context (`tideq::envelope::validate_trace_context`). */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
const MAX_TRACE_LEN = 1024;

/** `@opentelemetry/api`, or `null` when it is not installed (or does not load). */
function loadApi() {
  try {
    return require('@opentelemetry/api');
  } catch {
    return null;
  }
}

/** Wraps the methods of `binding.Queue`; returns whether OpenTelemetry was found. */
function instrument(binding) {
  const api = loadApi();
  if (api === null) return false;
  const { context, propagation, trace, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode } = api;
  const version = require('../package.json').version;

  /**
   * Whether an OpenTelemetry SDK registered a tracer provider: the API alone (installed as a
   * dependency of many packages) gives no-op spans, and wrapping each job in one would cost a
   * worker much of its speed for nothing. Checked when a worker starts.
   */
  function tracing() {
    let provider = trace.getTracerProvider();
    if (typeof ProxyTracerProvider === 'function' && provider instanceof ProxyTracerProvider) {
      provider = provider.getDelegate();
    }
    return provider != null && provider.constructor != null && provider.constructor.name !== 'NoopTracerProvider';
  }

  /** The active span's context as a job's `trace`, or `undefined` when there is none. */
  function currentTrace() {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span === undefined || !trace.isSpanContextValid(span.spanContext())) return undefined;
    const carrier = {};
    propagation.inject(active, carrier);
    // Only the W3C Trace Context headers (a propagator may write others, e.g. baggage).
    const traceparent = carrier.traceparent;
    // No propagator set (the API's default is a no-op), or one that writes something else.
    if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return undefined;
    const out = { traceparent };
    const { tracestate } = carrier;
    if (typeof tracestate === 'string' && tracestate !== '' && 'traceparent'.length + traceparent.length + 'tracestate'.length + tracestate.length <= MAX_TRACE_LEN) {
      out.tracestate = tracestate;
    }
    return out;
  }

  /** Whether `opts` (a job's options) leaves `trace` to the active span. */
  const wantsTrace = (opts) => opts == null || (typeof opts === 'object' && !Array.isArray(opts) && opts.trace == null);
  const withTrace = (opts, carrier) => (opts == null ? { trace: carrier } : { ...opts, trace: carrier });

  /** A job handler run inside a consumer span; `at` is where the job is among its arguments. */
  function traced(queue, handler, at) {
    const name = `${queue} process`;
    // Looked up once per handler (a worker wraps its handlers only once an SDK is set up).
    const tracer = trace.getTracer('tideq', version);
    const wrapped = function (...args) {
      const job = args[at];
      // A job without a trace context starts a trace of its own: nothing to extract.
      const headers = job.trace;
      const parent = headers ? propagation.extract(ROOT_CONTEXT, headers) : ROOT_CONTEXT;
      const attributes = {
        'messaging.system': 'tideq',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': queue,
        'messaging.message.id': job.id,
        'tideq.attempt': job.attempt,
      };
      const task = job.task;
      if (task != null) attributes['tideq.task'] = task;
      const span = tracer.startSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent);
      // A throw or rejection: recorded on the span, then passed on as it is.
      const fail = (err) => {
        span.recordException(err instanceof Error || typeof err === 'string' ? err : String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        span.end();
        return err;
      };
      let result;
      try {
        result = context.with(trace.setSpan(parent, span), handler, this, ...args);
      } catch (err) {
        throw fail(err);
      }
      if (!isPromise(result)) {
        span.end();
        return result;
      }
      // The span ends when the handler's Promise settles.
      return result.then(
        (value) => {
          span.end();
          return value;
        },
        (err) => {
          throw fail(err);
        },
      );
    };
    Object.defineProperty(wrapped, 'length', { value: handler.length });
    Object.defineProperty(wrapped, 'name', { value: handler.name });
    return wrapped;
  }

  /** `work`/`run`'s first argument with its job handlers wrapped; anything else as it is. */
  function tracedHandlers(queue, handler) {
    if (typeof handler === 'function') return traced(queue, handler, 0);
    if (handler === null || typeof handler !== 'object' || Array.isArray(handler)) return handler;
    // Task handlers, called with (data, job). The native side lists keys as `for...in` does.
    const out = {};
    for (const name in handler) {
      const h = handler[name];
      out[name] = typeof h === 'function' ? traced(queue, h, 1) : h;
    }
    return out;
  }

  const proto = binding.Queue.prototype;
  const native = {
    enqueue: proto.enqueue,
    enqueueTask: proto.enqueueTask,
    enqueueMany: proto.enqueueMany,
    enqueueFlow: proto.enqueueFlow,
    work: proto.work,
    run: proto.run,
  };
  // The options argument of a call (`at`), given the active span's context unless it has one.
  const withCallerTrace = (args, at) => {
    const carrier = currentTrace();
    if (carrier !== undefined && args.length <= at + 1 && wantsTrace(args[at])) {
      while (args.length <= at) args.push(undefined);
      args[at] = withTrace(args[at], carrier);
    }
    return args;
  };
  const wrappers = {
    // enqueue(payload, options)
    enqueue(...args) {
      return native.enqueue.apply(this, withCallerTrace(args, 1));
    },
    // enqueueTask(name, data, options)
    enqueueTask(...args) {
      return native.enqueueTask.apply(this, withCallerTrace(args, 2));
    },
    enqueueMany(jobs, ...rest) {
      // One injection per call, into each job without a trace of its own.
      const carrier = Array.isArray(jobs) ? currentTrace() : undefined;
      if (carrier !== undefined) {
        jobs = jobs.map((job) => {
          if (job instanceof Uint8Array) return { payload: job, trace: carrier };
          return job !== null && wantsTrace(job) ? withTrace(job, carrier) : job;
        });
      }
      return native.enqueueMany.call(this, jobs, ...rest);
    },
    enqueueFlow(root, ...rest) {
      // One injection per call, into each job of the tree without a trace of its own; the tree
      // is copied (a loop, not recursion: flows may be deep), each job once.
      const carrier = root !== null && typeof root === 'object' ? currentTrace() : undefined;
      if (carrier !== undefined) {
        const seen = new Map();
        const copy = (job) => {
          if (job === null || typeof job !== 'object' || Array.isArray(job) || job instanceof Uint8Array) return job;
          if (seen.has(job)) return seen.get(job);
          const out = wantsTrace(job) ? withTrace(job, carrier) : { ...job };
          seen.set(job, out);
          stack.push(out);
          return out;
        };
        const stack = [];
        root = copy(root);
        while (stack.length > 0) {
          const job = stack.pop();
          if (Array.isArray(job.children)) job.children = job.children.map(copy);
        }
      }
      return native.enqueueFlow.call(this, root, ...rest);
    },
    work(handler, ...rest) {
      return native.work.call(this, tracing() ? tracedHandlers(this.name, handler) : handler, ...rest);
    },
    run(handler, ...rest) {
      return native.run.call(this, tracing() ? tracedHandlers(this.name, handler) : handler, ...rest);
    },
  };
  for (const [key, wrapper] of Object.entries(wrappers)) {
    Object.defineProperty(wrapper, 'length', { value: native[key].length });
    Object.defineProperty(proto, key, { ...Object.getOwnPropertyDescriptor(proto, key), value: wrapper });
  }
  return true;
}

module.exports = { instrument };
