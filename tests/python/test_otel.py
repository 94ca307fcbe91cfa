"""Trace context across the queue, from Python: ``enqueue(trace=...)`` and ``Job.trace``, and
with OpenTelemetry (``tideq._otel``, loaded whenever ``opentelemetry`` is importable) enqueues
that carry the current span's context and workers that run each handler in a consumer span
continuing it. Spans are read back from the session's SDK (``otel_spans``: a global
``TracerProvider`` with an in-memory exporter, the default W3C propagator). A subprocess with
OpenTelemetry hidden shows that nothing of it is imported then and jobs run as before."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import tideq
from resp import command
from tideq import _otel

FAST = tideq.Backoff.fixed(0.05)
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
SPAN_ID = 0x00F067AA0BA902B7

tracer = trace.get_tracer("tideq-tests")


def drain(q: tideq.Queue, handler: Any) -> tideq.WorkerStats:
    return q.run(handler, poll_interval=0.05, stop_when_drained=True)


def process_spans(exporter: Any, queue: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name == f"{queue} process"]


def only_span(exporter: Any, name: str) -> Any:
    spans = [s for s in exporter.get_finished_spans() if s.name == name]
    assert len(spans) == 1, [s.name for s in exporter.get_finished_spans()]
    return spans[0]


def expected_attributes(queue: str, job_id: str, attempt: int = 1, task: str | None = None) -> dict[str, Any]:
    return {
        "messaging.system": "tideq",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": job_id,
        "tideq.attempt": attempt,
        **({} if task is None else {"tideq.task": task}),
    }


def traceparent_of(ctx: Any) -> str:
    """The W3C ``traceparent`` header of a span context."""
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"


def assert_continues(consumer: Any, producer: Any) -> None:
    """``consumer`` is a CONSUMER span in ``producer``'s trace, its child."""
    assert consumer.kind == SpanKind.CONSUMER
    assert consumer.context.trace_id == producer.context.trace_id
    assert consumer.parent is not None and consumer.parent.span_id == producer.context.span_id
    assert consumer.parent.is_remote, "the parent came through the job, not this process's context"


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


def test_a_job_enqueued_inside_a_span_runs_in_a_consumer_span_whose_parent_is_the_producer_span(jq, name, otel_spans):
    with tracer.start_as_current_span("produce") as producer:
        done = jq.enqueue(b"x", id="j1")
        assert trace.get_current_span() is producer
    seen: list[Any] = []

    def handler(job: tideq.Job) -> None:
        seen.append((job.trace, trace.get_current_span()))
        with tracer.start_as_current_span("inside"):
            pass

    assert drain(jq, handler).completed == 1
    (carried, current), = seen
    assert carried == {"traceparent": traceparent_of(producer.get_span_context())}
    consumer = only_span(otel_spans, f"{name} process")
    assert_continues(consumer, only_span(otel_spans, "produce"))
    assert consumer.attributes == expected_attributes(name, done.id)
    assert consumer.status.status_code == StatusCode.UNSET
    assert current.get_span_context().span_id == consumer.context.span_id, "current in the handler"
    inside = only_span(otel_spans, "inside")
    assert inside.parent is not None and inside.parent.span_id == consumer.context.span_id


def test_asyncio_a_job_enqueued_inside_a_span_runs_in_a_consumer_span_whose_parent_is_the_producer_span(client, name, otel_spans):
    async def main() -> tideq.WorkerStats:
        aq = tideq.AsyncQueue(name, client, backoff=FAST)
        with tracer.start_as_current_span("produce"):
            await aq.enqueue(b"a", id="a1")
            await aq.enqueue_many([b"b", (b"c", {"id": "c1"})])

        async def handler(job: tideq.Job) -> None:
            await asyncio.sleep(0)
            with tracer.start_as_current_span(f"inside {job.id}"):
                await asyncio.sleep(0)

        return await aq.run(handler, poll_interval=0.05, stop_when_drained=True)

    assert asyncio.run(main()).completed == 3
    producer = only_span(otel_spans, "produce")
    consumers = process_spans(otel_spans, name)
    assert len(consumers) == 3
    for consumer in consumers:
        assert_continues(consumer, producer)
        job_id = consumer.attributes["messaging.message.id"]
        assert consumer.attributes == expected_attributes(name, job_id)
        inside = only_span(otel_spans, f"inside {job_id}")
        assert inside.parent is not None and inside.parent.span_id == consumer.context.span_id


@pytest.mark.parametrize("api", ["blocking", "asyncio"])
def test_an_async_handlers_span_is_current_inside_the_handler(client, name, otel_spans, api):
    seen: list[tuple[Any, Any]] = []

    async def handler(job: tideq.Job) -> None:
        outer = trace.get_current_span()
        await asyncio.sleep(0.01)
        with tracer.start_as_current_span("child") as child:
            seen.append((outer, child))

    if api == "blocking":
        q = tideq.Queue(name, client, backoff=FAST)
        with tracer.start_as_current_span("produce"):
            q.enqueue(b"x")
        assert drain(q, handler).completed == 1
    else:
        async def main() -> tideq.WorkerStats:
            aq = tideq.AsyncQueue(name, client, backoff=FAST)
            with tracer.start_as_current_span("produce"):
                await aq.enqueue(b"x")
            return await aq.run(handler, poll_interval=0.05, stop_when_drained=True)

        assert asyncio.run(main()).completed == 1
    consumer = only_span(otel_spans, f"{name} process")
    assert_continues(consumer, only_span(otel_spans, "produce"))
    (outer, _), = seen
    assert outer.get_span_context().span_id == consumer.context.span_id
    child = only_span(otel_spans, "child")
    assert child.parent is not None and child.parent.span_id == consumer.context.span_id


def test_a_task_job_runs_in_a_consumer_span_named_after_its_queue_with_its_task(jq, name, otel_spans):
    got: list[tuple[int, int, Any]] = []

    @jq.task
    def add(a: int, b: int) -> int:
        got.append((a, b, trace.get_current_span()))
        return a + b

    with tracer.start_as_current_span("produce"):
        job_id = add.enqueue(1, b=2)
        other = jq.enqueue_task("add", [3, 4], format="msgpack").id
    assert drain_tasks(jq).completed == 2
    assert sorted((a, b) for a, b, _ in got) == [(1, 2), (3, 4)], "task functions get their arguments"
    producer = only_span(otel_spans, "produce")
    consumers = {s.attributes["messaging.message.id"]: s for s in process_spans(otel_spans, name)}
    assert set(consumers) == {job_id, other}
    for jid, consumer in consumers.items():
        assert_continues(consumer, producer)
        assert consumer.attributes == expected_attributes(name, jid, task="add")
    assert {c.get_span_context().span_id for _, _, c in got} == {c.context.span_id for c in consumers.values()}


def drain_tasks(q: tideq.Queue) -> tideq.WorkerStats:
    return q.run_tasks(poll_interval=0.05, stop_when_drained=True)


def test_asyncio_task_jobs_run_in_consumer_spans_and_keep_their_calling_convention(client, name, otel_spans):
    async def main() -> tuple[tideq.WorkerStats, list[Any]]:
        aq = tideq.AsyncQueue(name, client, backoff=FAST)
        got: list[Any] = []

        @aq.task
        async def greet(who: str) -> None:
            await asyncio.sleep(0)
            got.append((who, trace.get_current_span().get_span_context().span_id))

        @aq.task(name="count")
        def count(n: int) -> None:
            got.append((n, trace.get_current_span().get_span_context().span_id))

        with tracer.start_as_current_span("produce"):
            await greet.enqueue("ada")
            await count.enqueue(5)
        return await aq.run_tasks(poll_interval=0.05, stop_when_drained=True), got

    stats, got = asyncio.run(main())
    assert stats.completed == 2
    consumers = process_spans(otel_spans, name)
    assert {c.attributes["tideq.task"] for c in consumers} == {"greet", "count"}
    for consumer in consumers:
        assert_continues(consumer, only_span(otel_spans, "produce"))
    assert sorted(map(str, (arg for arg, _ in got))) == ["5", "ada"]
    assert {sid for _, sid in got} == {c.context.span_id for c in consumers}


def test_a_handler_that_raises_marks_its_span_error_with_the_exception_recorded(client, name, otel_spans):
    q = tideq.Queue(name, client, backoff=FAST, max_attempts=2)
    with tracer.start_as_current_span("produce"):
        job_id = q.enqueue(b"x").id

    def handler(job: tideq.Job) -> None:
        raise ValueError(f"attempt {job.attempt} broke")

    stats = drain(q, handler)
    assert (stats.completed, stats.failed) == (0, 2)
    info = q.get(job_id)
    assert info is not None and info.state == "dead" and info.last_error == "ValueError: attempt 2 broke"
    consumers = sorted(process_spans(otel_spans, name), key=lambda s: s.attributes["tideq.attempt"])
    assert [c.attributes["tideq.attempt"] for c in consumers] == [1, 2]
    for n, consumer in enumerate(consumers, 1):
        assert_continues(consumer, only_span(otel_spans, "produce"))
        assert consumer.status.status_code == StatusCode.ERROR
        assert consumer.status.description == f"ValueError: attempt {n} broke"
        (event,) = [e for e in consumer.events if e.name == "exception"]
        assert event.attributes["exception.type"] == "ValueError"
        assert event.attributes["exception.message"] == f"attempt {n} broke"


def test_an_async_handler_that_raises_or_times_out_marks_its_span_error(client, name, otel_spans):
    async def main() -> tideq.WorkerStats:
        aq = tideq.AsyncQueue(name, client, backoff=FAST, max_attempts=1)
        await aq.enqueue(b"raise", id="raise")
        await aq.enqueue(b"sleep", id="sleep", timeout=0.2)

        async def handler(job: tideq.Job) -> None:
            if job.id == "raise":
                raise KeyError("nope")
            await asyncio.sleep(30)

        return await aq.run(handler, poll_interval=0.05, stop_when_drained=True)

    assert asyncio.run(main()).failed == 2
    spans = {s.attributes["messaging.message.id"]: s for s in process_spans(otel_spans, name)}
    assert spans["raise"].status.status_code == StatusCode.ERROR
    assert [e.attributes["exception.type"] for e in spans["raise"].events] == ["KeyError"]
    assert spans["sleep"].status.status_code == StatusCode.ERROR, "cancelled for its timeout"
    assert [e.attributes["exception.type"] for e in spans["sleep"].events] == ["asyncio.exceptions.CancelledError"]


def test_an_enqueue_outside_any_span_carries_no_trace(jq, name, otel_spans):
    assert not trace.get_current_span().get_span_context().is_valid
    jq.enqueue(b"x")
    jq.enqueue_many([b"y", (b"z", {"priority": 1})])
    jq.enqueue_task("t", {"a": 1})
    seen: list[Any] = []
    assert drain(jq, lambda job: seen.append(job.trace)).completed == 4
    assert seen == [None] * 4
    consumers = process_spans(otel_spans, name)
    assert len(consumers) == 4 and all(c.parent is None for c in consumers), "root spans"


def test_an_explicit_trace_is_carried_as_given_and_wins_over_the_current_span(jq, name, otel_spans):
    given = {"traceparent": TRACEPARENT, "tracestate": "congo=t61rcWkgMzE"}
    with tracer.start_as_current_span("produce"):
        jq.enqueue(b"x", id="given", trace=given)
        jq.enqueue_many([(b"y", {"id": "many-given", "trace": given}), (b"z", {"id": "many-current"})])
        jq.enqueue_task("t", None, id="task-given", trace={"traceparent": TRACEPARENT})
        jq.task(lambda: None, name="t").enqueue_with(id="task-with-given", trace={"traceparent": TRACEPARENT})
    seen: dict[str, Any] = {}
    assert drain(jq, lambda job: seen.update({job.id: job.trace})).completed == 5
    assert seen["given"] == given and seen["many-given"] == given
    assert seen["task-given"] == seen["task-with-given"] == {"traceparent": TRACEPARENT}
    producer = only_span(otel_spans, "produce")
    assert seen["many-current"] == {"traceparent": traceparent_of(producer.context)}
    spans = {s.attributes["messaging.message.id"]: s for s in process_spans(otel_spans, name)}
    for jid in ("given", "many-given", "task-given", "task-with-given"):
        assert spans[jid].context.trace_id == TRACE_ID and spans[jid].parent.span_id == SPAN_ID
    assert spans["given"].context.trace_state.get("congo") == "t61rcWkgMzE"
    assert_continues(spans["many-current"], producer)


def test_the_trace_is_written_in_the_job_envelope_as_the_vectors_show(jq, redis_url, name):
    given = {"traceparent": TRACEPARENT, "tracestate": "congo=t61rcWkgMzE"}
    jq.enqueue(b"{}", id="traced-1", trace=given)
    env = tideq.decode_envelope(command(redis_url, "HGET", f"tideq:{{{name}}}:jobs", "traced-1"))
    assert env["trace"] == given
    jq.enqueue(b"{}", id="plain")
    env = tideq.decode_envelope(command(redis_url, "HGET", f"tideq:{{{name}}}:jobs", "plain"))
    assert "trace" not in env, "left out when unset, so older readers never see it"


MALFORMED = [
    {},
    {"traceparent": "not-a-traceparent"},
    {"traceparent": TRACEPARENT.upper()},
    {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
    {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
    {"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"tracestate": "congo=t61rcWkgMzE"},
    {"traceparent": TRACEPARENT, "baggage": "k=v"},
    {"traceparent": TRACEPARENT, "tracestate": "k=" + "v" * 1024},
]


@pytest.mark.parametrize("trace_value", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_trace_values_raise_invalid_argument_and_write_nothing(jq, trace_value):
    with pytest.raises(tideq.InvalidArgumentError, match="trace"):
        jq.enqueue(b"x", trace=trace_value)
    with pytest.raises(tideq.InvalidArgumentError, match="trace"):
        jq.enqueue_task("t", None, trace=trace_value)
    with pytest.raises(tideq.InvalidArgumentError, match="trace"):
        jq.enqueue_many([b"fine", (b"x", {"trace": trace_value})])
    with pytest.raises(tideq.InvalidArgumentError, match="trace"):
        asyncio.run(_async_enqueue(jq, trace_value))
    stats = jq.stats()
    assert (stats.ready, stats.delayed) == (0, 0)


async def _async_enqueue(jq: tideq.Queue, trace_value: Any) -> None:
    await tideq.AsyncQueue(jq.name, jq.client).enqueue(b"x", trace=trace_value)


@pytest.mark.parametrize("trace_value", ["00-abc", [("traceparent", TRACEPARENT)], {"traceparent": 1}, {1: TRACEPARENT}])
def test_a_trace_that_is_not_a_mapping_of_str_is_a_type_error(jq, trace_value):
    with pytest.raises(TypeError, match="trace must be a dict of str to str"):
        jq.enqueue(b"x", trace=trace_value)
    with pytest.raises(TypeError, match="trace"):
        jq.enqueue_many([(b"x", {"trace": trace_value})])
    assert jq.stats().ready == 0


def test_enqueue_many_looks_up_the_current_span_once_per_call(jq, otel_spans):
    calls: list[int] = []

    def counting_inject() -> Any:
        calls.append(1)
        return _otel.inject()

    tideq._tideq._set_otel_hooks(counting_inject, _otel.wrap)
    try:
        with tracer.start_as_current_span("produce"):
            jq.enqueue_many([b"%d" % i for i in range(50)])
            assert len(calls) == 1
            jq.enqueue_many([(b"x", {"trace": {"traceparent": TRACEPARENT}})])
            assert len(calls) == 1, "not called when every item gives its trace"
            jq.enqueue(b"y")
            assert len(calls) == 2
    finally:
        tideq._tideq._set_otel_hooks(_otel.inject, _otel.wrap)
    traces: list[Any] = []
    drain(jq, lambda job: traces.append(job.trace))
    assert len(traces) == 52 and traces.count({"traceparent": TRACEPARENT}) == 1
    assert len({t["traceparent"] for t in traces}) == 2


def test_a_failing_or_wrong_inject_hook_never_fails_an_enqueue(jq):
    unraisable: list[Any] = []

    def broken() -> Any:
        raise RuntimeError("broken propagator")

    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        for hook in (broken, lambda: {"traceparent": "garbage"}, lambda: {"x": "y"}):
            tideq._tideq._set_otel_hooks(hook, _otel.wrap)
            with tracer.start_as_current_span("produce"):
                assert jq.enqueue(b"x").created
    finally:
        sys.unraisablehook = old_hook
        tideq._tideq._set_otel_hooks(_otel.inject, _otel.wrap)
    assert [type(u.exc_value) for u in unraisable] == [RuntimeError]
    traces: list[Any] = []
    drain(jq, lambda job: traces.append(job.trace))
    assert traces == [None, None, None]


def test_batch_handlers_run_without_a_span(jq, name, otel_spans):
    with tracer.start_as_current_span("produce"):
        jq.enqueue_many([b"a", b"b"])
    seen: list[Any] = []

    def batch(jobs: list[tideq.Job]) -> None:
        seen.extend((j.trace is not None, trace.get_current_span().get_span_context().is_valid) for j in jobs)

    assert jq.run_batches(batch, size=2, poll_interval=0.05, stop_when_drained=True).completed == 2
    assert seen == [(True, False), (True, False)], "the trace is carried, no span is started"
    assert process_spans(otel_spans, name) == []


def test_a_plain_handler_that_returns_an_awaitable_keeps_its_span_until_it_is_done(jq, name, otel_spans):
    inner: list[Any] = []

    async def later(job: tideq.Job) -> str:
        await asyncio.sleep(0.01)
        inner.append(trace.get_current_span().get_span_context().span_id)
        return "ok"

    def handler(job: tideq.Job) -> Any:
        return later(job)

    with tracer.start_as_current_span("produce"):
        job_id = jq.enqueue(b"x").id
    assert drain(jq, handler).completed == 1
    info = jq.get(job_id)
    assert info is not None and info.result == "ok"
    consumer = only_span(otel_spans, f"{name} process")
    assert inner == [consumer.context.span_id]
    assert consumer.end_time >= consumer.start_time + 10_000_000


def test_wrapped_handlers_keep_their_name_and_whether_they_are_coroutine_functions(otel_provider):
    async def async_handler(job: tideq.Job) -> None: ...

    def sync_handler(job: tideq.Job) -> None: ...

    a, s = _otel.wrap(async_handler, "q"), _otel.wrap(sync_handler, "q")
    assert inspect.iscoroutinefunction(a) and not inspect.iscoroutinefunction(s)
    assert (a.__name__, a.__wrapped__, s.__name__, s.__wrapped__) == ("async_handler", async_handler, "sync_handler", sync_handler)  # type: ignore[attr-defined]
    assert _otel.wrap(5, "q") == 5, "left for the worker's own TypeError"  # type: ignore[arg-type]


def test_a_handler_that_is_not_callable_is_still_refused_by_the_worker(jq):
    with pytest.raises(TypeError, match="handler must be callable"):
        jq.work(5)  # type: ignore[arg-type]


HIDE_OPENTELEMETRY = {
    # Not installed: no finder finds it (importlib.util.find_spec returns None).
    "absent": """
        import importlib.machinery, sys
        PathFinder = importlib.machinery.PathFinder
        class Hide:
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if name.partition(".")[0] == "opentelemetry":
                    return None
                return PathFinder.find_spec(name, path, target)
            @classmethod
            def invalidate_caches(cls):
                PathFinder.invalidate_caches()
        sys.meta_path[:] = [Hide if f is PathFinder else f for f in sys.meta_path]
    """,
    # Blocked the way a site may block a package: a None entry in sys.modules.
    "blocked": """
        import sys
        sys.modules["opentelemetry"] = None
    """,
}

WITHOUT_OPENTELEMETRY = """
    import importlib.util
    assert importlib.util.find_spec("opentelemetry") is None
    import tideq
    q = tideq.Queue(sys.argv[2], url=sys.argv[1])
    q.enqueue(b"plain", id="plain")
    q.enqueue(b"given", id="given", trace={"traceparent": sys.argv[3]})
    seen = {}
    stats = q.run(lambda job: seen.update({job.id: job.trace}), poll_interval=0.05, stop_when_drained=True)
    assert stats.completed == 2, stats
    assert seen == {"plain": None, "given": {"traceparent": sys.argv[3]}}, seen
    loaded = sorted(m for m, mod in sys.modules.items()
                    if m.partition(".")[0] == "opentelemetry" and mod is not None)
    assert loaded == [], loaded
    assert "tideq._otel" not in sys.modules
    print("ok")
"""


@pytest.mark.parametrize("how", sorted(HIDE_OPENTELEMETRY))
def test_without_opentelemetry_nothing_of_it_is_imported_and_jobs_run_as_before(redis_url, name, how):
    code = textwrap.dedent(HIDE_OPENTELEMETRY[how]) + textwrap.dedent(WITHOUT_OPENTELEMETRY)
    res = subprocess.run([sys.executable, "-c", code, redis_url, name, TRACEPARENT],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


API_ONLY = """
    import sys
    import tideq
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tideq import _otel

    # Each job's span is made current with trace.use_span: counted, per job.
    uses = 0
    use_span = trace.use_span
    def counted(*args, **kwargs):
        global uses
        uses += 1
        return use_span(*args, **kwargs)
    _otel.trace.use_span = counted

    q = tideq.Queue(sys.argv[2], url=sys.argv[1])
    handler = lambda job: None
    q.enqueue_many([b"x"] * 50)
    before = q.run(handler, poll_interval=0.05, stop_when_drained=True).completed
    assert not _otel.tracing() and _otel.wrap(handler, "q") is handler
    without = uses

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    q.enqueue_many([b"x"] * 5)
    after = q.run(handler, poll_interval=0.05, stop_when_drained=True).completed
    print(before, after, without, uses - without, len(exporter.get_finished_spans()))
"""


def test_with_only_the_opentelemetry_api_a_worker_makes_no_call_of_it_per_job_until_an_sdk_is_set(redis_url, name):
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(API_ONLY), redis_url, name],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["50", "5", "0", "5", "5"], res.stdout
