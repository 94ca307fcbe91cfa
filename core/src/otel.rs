//! Trace context across the queue. A job's envelope may carry its producer's trace context
//! ([`TraceContext`]: the W3C `traceparent` and `tracestate` headers), so the span of the
//! worker that runs the job continues the producer's trace, whatever the languages of the two.
//!
//! With the `opentelemetry` cargo feature:
//! - an enqueue without [`EnqueueOptions::trace`] carries the context of the caller's current
//!   span: the current `tracing` span's (through `tracing-opentelemetry`), else the current
//!   OpenTelemetry [`Context`](opentelemetry::Context)'s; injected with the global text map
//!   propagator (set one, e.g. `TraceContextPropagator`, as usual);
//! - a worker runs each job's handler inside a `tracing` span `tideq.process` (its OpenTelemetry
//!   name `<queue> process`, kind consumer, the messaging attributes of the OpenTelemetry
//!   semantic conventions), whose parent is the job's trace context. A handler that fails marks
//!   the span's status as an error.
//!
//! Without the feature, [`EnqueueOptions::trace`] is carried as given, and nothing else changes.
//! Batch handlers (`work_batches`) run without a span.
//!
//! [`TraceContext`]: crate::envelope::TraceContext
//! [`EnqueueOptions::trace`]: crate::EnqueueOptions::trace

use crate::envelope::TraceContext;
use crate::job::{EnqueueOptions, Job};
use crate::worker::{JobFuture, JobHandler};

/// The caller's current span's trace context (feature `opentelemetry`; else none), for the jobs
/// of an enqueue call that give no [`EnqueueOptions::trace`]: looked up once per call, only when
/// one of them needs it.
pub(crate) fn ambient<'a>(
    mut opts: impl Iterator<Item = &'a EnqueueOptions>,
) -> Option<TraceContext> {
    if opts.any(|o| o.trace.is_none()) {
        current()
    } else {
        None
    }
}

#[cfg(not(feature = "opentelemetry"))]
fn current() -> Option<TraceContext> {
    None
}

/// Runs `handler` on `job` (feature `opentelemetry`: inside its consumer span).
pub(crate) fn run(handler: &JobHandler, job: Job) -> JobFuture {
    #[cfg(feature = "opentelemetry")]
    {
        imp::run(handler, job)
    }
    #[cfg(not(feature = "opentelemetry"))]
    {
        handler(job)
    }
}

#[cfg(feature = "opentelemetry")]
fn current() -> Option<TraceContext> {
    imp::current()
}

#[cfg(feature = "opentelemetry")]
mod imp {
    use opentelemetry::propagation::{Extractor, Injector};
    use opentelemetry::trace::TraceContextExt;
    use tracing::Instrument;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::*;

    struct Carrier<'a>(&'a mut TraceContext);

    impl Injector for Carrier<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key.to_string(), value);
        }
    }

    struct Reader<'a>(&'a TraceContext);

    impl Extractor for Reader<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(String::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    pub(super) fn current() -> Option<TraceContext> {
        let mut cx = tracing::Span::current().context();
        if !cx.span().span_context().is_valid() {
            cx = opentelemetry::Context::current();
        }
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = TraceContext::new();
        opentelemetry::global::get_text_map_propagator(|p| {
            p.inject_context(&cx, &mut Carrier(&mut carrier))
        });
        // Only what the envelope may carry (and only if the propagator wrote a traceparent).
        carrier.retain(|k, _| k == "traceparent" || k == "tracestate");
        crate::envelope::validate_trace_context(&carrier)
            .is_ok()
            .then_some(carrier)
    }

    pub(super) fn run(handler: &JobHandler, job: Job) -> JobFuture {
        let span = tracing::info_span!(
            "tideq.process",
            otel.name = format!("{} process", job.queue),
            otel.kind = "consumer",
            otel.status_code = tracing::field::Empty,
            messaging.system = "tideq",
            messaging.operation.type = "process",
            messaging.operation.name = "process",
            messaging.destination.name = %job.queue,
            messaging.message.id = %job.id,
            tideq.attempt = job.attempt,
            tideq.task = job.task.as_deref(),
        );
        if let Some(t) = &job.trace {
            let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Reader(t)));
            let _ = span.set_parent(parent);
        }
        let fut = handler(job).instrument(span.clone());
        Box::pin(async move {
            let r = fut.await;
            if let Err(e) = &r {
                span.record("otel.status_code", "ERROR");
                span.in_scope(|| tracing::warn!(error = %e, "job attempt failed"));
            }
            r
        })
    }
}
