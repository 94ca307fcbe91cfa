"""Job-queue bench of tideq from Python (the repo's build, in the root .venv), the same work as
bullmq_py.py and arq_py.py.

Usage: .venv/bin/python bench/jobs/tideq_py.py URL N   (prints ONE JSON line)

Each measurement runs with the blocking API (tideq.Queue, plain handler: worker threads) and the
asyncio API (tideq.AsyncQueue, `async def` handler on the running loop); the faster one is
reported, and "variant" says which ("blocking" / "async"); both numbers are in "both".
- enqueue_seq: N/4 enqueue() calls, each finished before the next.
- enqueue_bulk: N jobs in one enqueue_many() (pipelined inside).
- work_c1/c10/c100: N jobs enqueued first, then work(handler, concurrency=c,
  stop_when_drained=True); jobs/s from the first handler call until join() returns (all acked).
- lateness_p50/p99/min_ms: 2 000 jobs, job i with run_at = start + i * 0.5 ms (due times spread
  evenly over one second, start ~2 s ahead), each carrying its due ms in its payload
  (`{"due": <ms>, ...}`); concurrency 100; the handler reads the clock, then `job.json()["due"]`:
  lateness = handler start - that job's due time (ms, this machine's clock).
- burst_p50/p99_ms: the same with all 2 000 due at one instant.
  For both, the variant with the lower p99 is reported (benchlib.py describes the method).
- start_p50/p99_ms: enqueue to start, an idle worker at concurrency 10 and 2 000 jobs enqueued one
  by one at 1 000/s (benchlib.py describes it); the variant with the lower p99 is reported.
- rss_mb after the work runs; worker_rss_mb: the peak RSS of a process running only a blocking
  worker at concurrency 100 over N jobs (benchlib.py, worker_rss); idle: one blocking worker (concurrency 10) alone for 5 s.
Queue defaults: 5 attempts, exponential backoff, keep_completed 1000.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import tideq

import benchlib as B

DIAG: dict[str, Any] = {}


# ---- blocking API ---------------------------------------------------------------------------


def seq_blocking(url: str, n: int) -> float:
    q = tideq.Queue(B.fresh_name("tqpy-seq"), url=url)
    q.stats()  # connect outside the timed part
    t0 = time.perf_counter()
    for _ in range(n):
        q.enqueue(B.PAYLOAD)
    return B.rate(n, time.perf_counter() - t0)


def bulk_blocking(q: tideq.Queue, n: int) -> float:
    q.stats()
    items = [B.PAYLOAD] * n
    t0 = time.perf_counter()
    done = q.enqueue_many(items)
    r = B.rate(n, time.perf_counter() - t0)
    assert len(done) == n
    return r


def work_blocking(url: str, n: int, c: int) -> float:
    q = tideq.Queue(B.fresh_name(f"tqpy-b-c{c}"), url=url)
    bulk_blocking(q, n)
    mark, first = B.timed_first()

    def handler(job: tideq.Job) -> None:
        mark()

    phase = B.Phase(url)
    phase.begin()
    w = q.work(handler, concurrency=c, stop_when_drained=True)
    stats = w.join()
    end = time.perf_counter()
    DIAG[f"blocking_c{c}"] = phase.end(n)
    assert stats.completed == n, (stats.completed, n)
    return B.rate(n, end - first())


def late_items(spread_ms: int) -> list[tuple[bytes, dict]]:
    """The lateness run's jobs: each payload carries the due ms its run_at says."""
    return [(B.due_payload(due), {"run_at": due / 1000}) for due in B.late_dues(spread_ms)]


def late_blocking(url: str, spread_ms: int) -> list[float]:
    q = tideq.Queue(B.fresh_name("tqpy-b-late"), url=url)
    q.enqueue_many(late_items(spread_ms))
    late: list[float] = []

    def handler(job: tideq.Job) -> None:
        now = time.time() * 1000
        late.append(now - job.json()["due"])

    q.work(handler, concurrency=B.LATE_CONCURRENCY, stop_when_drained=True).join()
    assert len(late) == B.LATE_JOBS, len(late)
    return late


def start_blocking(url: str) -> list[float]:
    """Enqueue to start (benchlib.py): a blocking worker waiting, jobs enqueued one by one."""
    q = tideq.Queue(B.fresh_name("tqpy-b-start"), url=url)
    got: list[float] = []

    def handler(job: tideq.Job) -> None:
        got.append(time.time() * 1000 - job.json()["at"])

    w = q.work(handler, concurrency=B.START_CONCURRENCY)
    time.sleep(0.5)
    for t in B.paced_times():
        B.wait_until(t)
        q.enqueue(B.at_payload())
    while len(got) < B.START_JOBS:
        time.sleep(0.01)
    w.shutdown()
    return got


async def start_async(url: str) -> list[float]:
    q = tideq.AsyncQueue(B.fresh_name("tqpy-a-start"), url=url)
    got: list[float] = []

    async def handler(job: tideq.Job) -> None:
        got.append(time.time() * 1000 - job.json()["at"])

    w = q.work(handler, concurrency=B.START_CONCURRENCY)
    await asyncio.sleep(0.5)
    for t in B.paced_times():
        d = t - time.perf_counter()
        if d > 0.001:
            await asyncio.sleep(d)
        await q.enqueue(B.at_payload())
    while len(got) < B.START_JOBS:
        await asyncio.sleep(0.01)
    await w.shutdown()
    return got


def idle_blocking(url: str) -> dict:
    q = tideq.Queue(B.fresh_name("tqpy-idle"), url=url)
    w = q.work(lambda job: None, concurrency=B.IDLE_CONCURRENCY)
    time.sleep(1.0)
    res = B.measure_idle(url)
    w.shutdown()
    return res


# ---- asyncio API ----------------------------------------------------------------------------


async def seq_async(url: str, n: int) -> float:
    q = tideq.AsyncQueue(B.fresh_name("tqpy-aseq"), url=url)
    await q.stats()
    t0 = time.perf_counter()
    for _ in range(n):
        await q.enqueue(B.PAYLOAD)
    return B.rate(n, time.perf_counter() - t0)


async def bulk_async(q: tideq.AsyncQueue, n: int) -> float:
    await q.stats()
    items = [B.PAYLOAD] * n
    t0 = time.perf_counter()
    done = await q.enqueue_many(items)
    r = B.rate(n, time.perf_counter() - t0)
    assert len(done) == n
    return r


async def bulk_async_fresh(url: str, n: int) -> float:
    return await bulk_async(tideq.AsyncQueue(B.fresh_name("tqpy-abulk"), url=url), n)


async def work_async(url: str, n: int, c: int) -> float:
    q = tideq.AsyncQueue(B.fresh_name(f"tqpy-a-c{c}"), url=url)
    await bulk_async(q, n)
    mark, first = B.timed_first()

    async def handler(job: tideq.Job) -> None:
        mark()

    phase = B.Phase(url)
    phase.begin()
    w = q.work(handler, concurrency=c, stop_when_drained=True)
    stats = await w.join()
    end = time.perf_counter()
    DIAG[f"async_c{c}"] = phase.end(n)
    assert stats.completed == n, (stats.completed, n)
    return B.rate(n, end - first())


async def late_async(url: str, spread_ms: int) -> list[float]:
    q = tideq.AsyncQueue(B.fresh_name("tqpy-a-late"), url=url)
    await q.enqueue_many(late_items(spread_ms))
    late: list[float] = []

    async def handler(job: tideq.Job) -> None:
        now = time.time() * 1000
        late.append(now - job.json()["due"])

    await q.work(handler, concurrency=B.LATE_CONCURRENCY, stop_when_drained=True).join()
    assert len(late) == B.LATE_JOBS, len(late)
    return late


# ---- main -----------------------------------------------------------------------------------


def tracing_cost(url: str, n: int) -> dict[str, Any]:
    """JOBS_BENCH_TRACING=1: work_c100 (blocking) three times with no tracer provider, then three
    times once an OpenTelemetry SDK is set up (a TracerProvider whose BatchSpanProcessor hands
    the spans to an exporter that drops them, so export I/O is not counted): each job then runs
    in a span. Reports both and the ratio of the bests."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    off = [work_blocking(url, n, 100) for _ in range(3)]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    on = [work_blocking(url, n, 100) for _ in range(3)]
    provider.shutdown()
    return {"runtime": "python", "lib": "tideq", "tracing_off_c100": off, "tracing_on_c100": on,
            "tracing_on_vs_off": round(max(on) / max(off), 3)}


def main() -> None:
    url, n = B.usage(__doc__)
    if os.environ.get("JOBS_BENCH_TRACING"):
        B.emit(tracing_cost(url, n))
        return
    queue = B.worker_mode()
    if queue:
        stats = tideq.Queue(queue, url=url).work(lambda job: None, concurrency=100,
                                                 stop_when_drained=True).join()
        assert stats.completed == n, (stats.completed, n)
        print(B.rss_mb("VmHWM"))
        return
    res: dict[str, Any] = {"runtime": "python", "lib": "tideq"}
    both: dict[str, dict[str, float]] = {}
    variant: dict[str, str] = {}

    def pick(key: str, blocking: float, asynchronous: float) -> None:
        both[key] = {"blocking": blocking, "async": asynchronous}
        variant[key] = "blocking" if blocking >= asynchronous else "async"
        res[key] = max(blocking, asynchronous)

    seq = max(1, n // 4)
    pick("enqueue_seq", seq_blocking(url, seq), asyncio.run(seq_async(url, seq)))
    pick("enqueue_bulk", bulk_blocking(tideq.Queue(B.fresh_name("tqpy-bulk"), url=url), n),
         asyncio.run(bulk_async_fresh(url, n)))
    for c in (1, 10, 100):
        pick(f"work_c{c}", work_blocking(url, n, c), asyncio.run(work_async(url, n, c)))
    res["rss_mb"] = B.rss_mb()
    rss_q = tideq.Queue(B.fresh_name("tqpy-rss"), url=url)
    bulk_blocking(rss_q, n)
    res["worker_rss_mb"] = B.worker_rss(__file__, url, n, rss_q.name)
    # Spread over one second (lateness_*), then one instant (burst_*); per run, the variant with
    # the lower p99.
    for kind, spread_ms, summary in (("lateness", B.LATE_SPREAD_MS, B.lateness_summary),
                                     ("burst", 0, B.burst_summary)):
        lb = summary(late_blocking(url, spread_ms))
        la = summary(asyncio.run(late_async(url, spread_ms)))
        p99 = f"{kind}_p99_ms"
        both[p99] = {"blocking": lb[p99], "async": la[p99]}
        best = lb if lb[p99] <= la[p99] else la
        variant[kind] = "blocking" if best is lb else "async"
        res.update(best)
    sb = B.start_summary(start_blocking(url))
    sa = B.start_summary(asyncio.run(start_async(url)))
    both["start_p99_ms"] = {"blocking": sb["start_p99_ms"], "async": sa["start_p99_ms"]}
    best = sb if sb["start_p99_ms"] <= sa["start_p99_ms"] else sa
    variant["start"] = "blocking" if best is sb else "async"
    res.update(best)
    res["variant"] = variant
    res["both"] = both
    res["diag"] = DIAG
    res.update(idle_blocking(url))
    B.emit(res)


if __name__ == "__main__":
    main()
