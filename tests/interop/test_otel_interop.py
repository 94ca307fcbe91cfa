"""Cross-language traces: a job carries its producer's W3C trace context, so the worker's
consumer span continues the producer's trace whichever runtimes the two are. Python reads its
spans from the session's OpenTelemetry SDK (an in-memory exporter); Node runs
``interop_otel.mjs`` (``produce``: enqueue inside a span and print it; ``work``: drain the queue
and print its process spans), each process with its own SDK and the W3C propagator."""
import json
import subprocess
import uuid
from pathlib import Path

from opentelemetry import trace
from opentelemetry.trace import SpanKind

import tideq
from tideq_harness import otel_provider, otel_spans

__all__ = ["otel_provider", "otel_spans"]

ROOT = Path(__file__).resolve().parents[2]
NODE_OTEL = ["node", str(ROOT / "tests/interop/interop_otel.mjs")]


def node(*args):
    res = subprocess.run(NODE_OTEL + list(args), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def test_a_node_producers_trace_continues_in_a_python_worker(redis_url, otel_spans):
    queue = f"interop-otel-{uuid.uuid4().hex}"
    (produced,) = node("produce", redis_url, queue, "from-node")
    seen = []
    q = tideq.Queue(queue, url=redis_url)
    stats = q.run(lambda job: seen.append((job.id, job.trace)), poll_interval=0.05, stop_when_drained=True)
    assert stats.completed == 1
    ((job_id, carried),) = seen
    assert job_id == "from-node"
    assert carried["traceparent"].startswith(f"00-{produced['traceId']}-{produced['spanId']}-")
    (consumer,) = [s for s in otel_spans.get_finished_spans() if s.name == f"{queue} process"]
    assert consumer.kind == SpanKind.CONSUMER
    assert f"{consumer.context.trace_id:032x}" == produced["traceId"]
    assert consumer.parent is not None and f"{consumer.parent.span_id:016x}" == produced["spanId"]
    assert consumer.attributes["messaging.message.id"] == "from-node"
    assert consumer.attributes["messaging.destination.name"] == queue


def test_a_python_producers_trace_continues_in_a_node_worker(redis_url, otel_spans):
    queue = f"interop-otel-{uuid.uuid4().hex}"
    q = tideq.Queue(queue, url=redis_url)
    with trace.get_tracer("interop").start_as_current_span("produce") as producer:
        q.enqueue(b"{}", id="from-python")
    ctx = producer.get_span_context()
    (consumer,) = node("work", redis_url, queue)
    assert consumer == {
        "name": f"{queue} process",
        "traceId": f"{ctx.trace_id:032x}",
        "parentSpanId": f"{ctx.span_id:016x}",
        "kind": "CONSUMER",
        "jobId": "from-python",
    }
    info = q.get("from-python")
    assert info is not None and info.state == "completed"
