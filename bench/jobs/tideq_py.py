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
- lateness: 2 000 jobs with one run_at ~2 s ahead; concurrency 100; lateness = handler start -
  due time (ms, this machine's clock); the variant with the lower p99 is reported.
- rss_mb after the work runs; idle: one blocking worker (concurrency 10) alone for 5 s.
Queue defaults: 5 attempts, exponential backoff, keep_completed 1000.
"""

from __future__ import annotations

import asyncio
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


def late_blocking(url: str) -> dict:
    q = tideq.Queue(B.fresh_name("tqpy-b-late"), url=url)
    due_ms = round(time.time() * 1000 + B.LATE_AHEAD_S * 1000)
    q.enqueue_many([(B.PAYLOAD, {"run_at": due_ms / 1000})] * B.LATE_JOBS)
    late: list[float] = []

    def handler(job: tideq.Job) -> None:
        late.append(time.time() * 1000 - due_ms)

    q.work(handler, concurrency=B.LATE_CONCURRENCY, stop_when_drained=True).join()
    assert len(late) == B.LATE_JOBS, len(late)
    return B.lateness_summary(late)


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


async def late_async(url: str) -> dict:
    q = tideq.AsyncQueue(B.fresh_name("tqpy-a-late"), url=url)
    due_ms = round(time.time() * 1000 + B.LATE_AHEAD_S * 1000)
    await q.enqueue_many([(B.PAYLOAD, {"run_at": due_ms / 1000})] * B.LATE_JOBS)
    late: list[float] = []

    async def handler(job: tideq.Job) -> None:
        late.append(time.time() * 1000 - due_ms)

    await q.work(handler, concurrency=B.LATE_CONCURRENCY, stop_when_drained=True).join()
    assert len(late) == B.LATE_JOBS, len(late)
    return B.lateness_summary(late)


# ---- main -----------------------------------------------------------------------------------


def main() -> None:
    url, n = B.usage(__doc__)
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
    lb, la = late_blocking(url), asyncio.run(late_async(url))
    both["lateness_p99_ms"] = {"blocking": lb["lateness_p99_ms"], "async": la["lateness_p99_ms"]}
    best = lb if lb["lateness_p99_ms"] <= la["lateness_p99_ms"] else la
    variant["lateness"] = "blocking" if best is lb else "async"
    res.update(best)
    res["variant"] = variant
    res["both"] = both
    res["diag"] = DIAG
    res.update(idle_blocking(url))
    B.emit(res)


if __name__ == "__main__":
    main()
