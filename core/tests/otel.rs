//! Traces across the queue (feature `opentelemetry`): a job enqueued inside a span runs in a
//! consumer span of that trace, whether the producer traced with `tracing` or with the
//! OpenTelemetry API; a trace context given on enqueue is carried as given and checked. Spans are
//! kept in memory (the SDK's in-memory exporter), against a real redis-server.
#![cfg(feature = "opentelemetry")]

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::jobs::*;
use common::RedisServer;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::Context;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tideq::{EnqueueOptions, ErrorKind, Job, TraceContext};
use tracing::Instrument as _;
use tracing_subscriber::prelude::*;

struct Telemetry {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

/// One tracer provider and `tracing` subscriber for the whole test binary (the worker's tasks
/// run on the runtime's threads, so the subscriber must be global).
fn telemetry() -> &'static Telemetry {
    static T: OnceLock<Telemetry> = OnceLock::new();
    T.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        opentelemetry::global::set_tracer_provider(provider.clone());
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tideq-test"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("one subscriber");
        Telemetry { exporter, provider }
    })
}

fn finished(t: &Telemetry) -> Vec<SpanData> {
    t.provider.force_flush().unwrap();
    t.exporter.get_finished_spans().unwrap()
}

fn attr<'a>(s: &'a SpanData, key: &str) -> Option<&'a opentelemetry::Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// Runs the queue's jobs until drained; the handler fails a job whose payload is `fail`. Returns
/// the trace id each handler saw as current, by job id.
async fn run(q: &tideq::Queue) -> Vec<(String, String)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let w = q
        .work(drained(), move |job: Job| {
            let s = s.clone();
            async move {
                let cx =
                    tracing_opentelemetry::OpenTelemetrySpanExt::context(&tracing::Span::current());
                let trace_id = cx.span().span_context().trace_id().to_string();
                s.lock().unwrap().push((job.id.clone(), trace_id));
                if job.payload == b"fail" {
                    return Err("it failed".to_string());
                }
                Ok(())
            }
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), w.join())
        .await
        .unwrap();
    let v = seen.lock().unwrap().clone();
    v
}

fn process_span<'a>(spans: &'a [SpanData], queue: &str, id: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| {
            s.name == format!("{queue} process")
                && attr(s, "messaging.message.id").map(|v| v.as_str()) == Some(id.into())
        })
        .unwrap_or_else(|| panic!("no process span for job {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_in_an_opentelemetry_span_runs_in_a_consumer_span_of_its_trace() {
    let t = telemetry();
    let server = RedisServer::start();
    let q = queue(&server.url);
    let producer = t.provider.tracer("producer").start("send order");
    let sent = producer.span_context().clone();
    let cx = Context::current_with_span(producer);
    let job = q
        .enqueue(b"x", EnqueueOptions::default())
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    let info = q.get(&job.id).await.unwrap().unwrap();
    assert_eq!(info.state, tideq::JobState::Ready);

    let seen = run(&q).await;
    assert_eq!(seen, vec![(job.id.clone(), sent.trace_id().to_string())]);
    let spans = finished(t);
    let s = process_span(&spans, q.name(), &job.id);
    assert_eq!(s.span_context.trace_id(), sent.trace_id());
    assert_eq!(s.parent_span_id, sent.span_id());
    assert_eq!(s.span_kind, SpanKind::Consumer);
    assert_eq!(
        attr(s, "messaging.system").map(|v| v.as_str()),
        Some("tideq".into())
    );
    assert_eq!(
        attr(s, "messaging.destination.name").map(|v| v.as_str()),
        Some(q.name().into())
    );
    assert_eq!(s.status, Status::Unset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_in_a_tracing_span_continues_its_trace_and_a_failed_attempt_marks_the_span()
{
    let t = telemetry();
    let server = RedisServer::start();
    let q = queue(&server.url);
    let span = tracing::info_span!("checkout");
    let trace_id = tracing_opentelemetry::OpenTelemetrySpanExt::context(&span)
        .span()
        .span_context()
        .trace_id();
    let opts = EnqueueOptions {
        max_attempts: Some(1),
        ..Default::default()
    };
    let job = q.enqueue(b"fail", opts).instrument(span).await.unwrap();
    let seen = run(&q).await;
    assert_eq!(seen, vec![(job.id.clone(), trace_id.to_string())]);
    let spans = finished(t);
    let s = process_span(&spans, q.name(), &job.id);
    assert_eq!(s.span_context.trace_id(), trace_id);
    assert!(matches!(s.status, Status::Error { .. }), "{:?}", s.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_outside_any_span_carries_no_trace_context() {
    telemetry();
    let server = RedisServer::start();
    let q = queue(&server.url);
    q.enqueue(b"x", id("plain")).await.unwrap();
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].trace, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_context_given_on_enqueue_is_carried_as_given() {
    let t = telemetry();
    let server = RedisServer::start();
    let q = queue(&server.url);
    let given = TraceContext::from([
        (
            "traceparent".to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
        ),
        ("tracestate".to_string(), "congo=t61rcWkgMzE".to_string()),
    ]);
    // Given explicitly, it wins over the current span's.
    let cx = Context::current_with_span(t.provider.tracer("p").start("other"));
    let opts = EnqueueOptions {
        trace: Some(given.clone()),
        ..id("given")
    };
    q.enqueue(b"x", opts).with_context(cx).await.unwrap();
    let leased = q.lease_jobs(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(leased[0].trace.as_ref(), Some(&given));
}

#[tokio::test]
async fn a_malformed_trace_context_is_invalid_and_nothing_is_written() {
    let server = RedisServer::start();
    let q = queue(&server.url);
    let bad: Vec<TraceContext> = vec![
        TraceContext::new(),
        TraceContext::from([("traceparent".to_string(), "not-a-traceparent".to_string())]),
        TraceContext::from([(
            "traceparent".to_string(),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_string(),
        )]),
        TraceContext::from([
            (
                "traceparent".to_string(),
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
            ),
            ("baggage".to_string(), "k=v".to_string()),
        ]),
        TraceContext::from([
            (
                "traceparent".to_string(),
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
            ),
            ("tracestate".to_string(), "x".repeat(2000)),
        ]),
    ];
    for t in bad {
        let opts = EnqueueOptions {
            trace: Some(t.clone()),
            ..id("bad")
        };
        let err = q.enqueue(b"x", opts).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{t:?}: {err}");
    }
    assert_eq!(q.stats().await.unwrap().ready, 0);
    assert!(q.get("bad").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_many_in_a_span_gives_its_context_to_every_job_without_one_of_its_own() {
    let t = telemetry();
    let server = RedisServer::start();
    let q = queue(&server.url);
    let producer = t.provider.tracer("producer").start("import");
    let sent = producer.span_context().clone();
    let cx = Context::current_with_span(producer);
    let given = TraceContext::from([(
        "traceparent".to_string(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
    )]);
    let own = EnqueueOptions {
        trace: Some(given.clone()),
        ..id("own")
    };
    let jobs = vec![
        (b"a".to_vec(), id("a")),
        (b"b".to_vec(), id("b")),
        (b"c".to_vec(), own),
    ];
    q.enqueue_many(&jobs).with_context(cx).await.unwrap();
    let leased = q.lease_jobs(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(leased.len(), 3);
    for job in leased {
        let trace = job.trace.expect("a trace context");
        if job.id == "own" {
            assert_eq!(trace, given);
        } else {
            let tp = &trace["traceparent"];
            assert!(tp.contains(&sent.trace_id().to_string()), "{tp}");
            assert!(tp.contains(&sent.span_id().to_string()), "{tp}");
        }
    }
}
