"""Job-queue bench of arq, the same work as tideq_py.py.

Usage: bench/jobs/.venv-arq/bin/python bench/jobs/arq_py.py URL N   (prints ONE JSON line)

- enqueue_seq: N/4 `await pool.enqueue_job()` one after another.
- enqueue_bulk: arq has no bulk enqueue: N `enqueue_job()` calls run with asyncio.gather in
  windows of 500 (each call is its own WATCH/MULTI/EXEC transaction, on pooled connections).
- work_c1/c10/c100: N jobs enqueued first, then a burst-mode Worker (max_jobs = concurrency) that
  stops when the queue is empty; jobs/s from the first job call until the worker has returned
  (or, past CAP_S seconds, the jobs completed by then).
- lateness_p50/p99/min_ms: 2 000 jobs, job i with `_defer_until` = start + i * 0.5 ms (due times
  spread evenly over one second, start ~2 s ahead), each carrying its due ms in its argument
  (`{"due": <ms>, ...}`); Worker max_jobs 100; the job function reads the clock, then
  `payload["due"]`: lateness = job start - that job's due time (ms, this machine's clock).
- burst_p50/p99_ms: the same with all 2 000 due at one instant (benchlib.py describes the method).
- rss_mb after the work runs; idle: one Worker (max_jobs 10) alone on the server for 5 s.
arq defaults otherwise: poll_delay 0.5 s (arq polls the queue; it has no blocking wait),
queue_read_limit max(5 * max_jobs, 100), max_tries 5, keep_result 3600 s (results are stored).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from datetime import datetime, timezone

from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker, func

import benchlib as B

WINDOW = 500
# arq leases at most max_jobs jobs per poll (every 0.5 s), so max_jobs=1 runs ~2 jobs/s: each work
# measurement is cut off after CAP_S seconds and reports the jobs done by then (named in "capped").
CAP_S = 30.0
CAPPED: list[str] = []
DIAG: dict = {}
_on_job = lambda payload: None  # noqa: E731  set per measurement


async def noop(ctx, payload):
    _on_job(payload)


FUNCS = [func(noop, name="noop")]


def settings(url: str) -> RedisSettings:
    host, port, db = B.host_port(url)
    return RedisSettings(host=host, port=port, database=db)


async def enqueue_seq(url: str, n: int) -> float:
    pool = await create_pool(settings(url))
    name = B.fresh_name("arq-seq")
    t0 = time.perf_counter()
    for _ in range(n):
        await pool.enqueue_job("noop", B.PAYLOAD_OBJ, _queue_name=name)
    r = B.rate(n, time.perf_counter() - t0)
    await pool.aclose()
    return r


async def enqueue_many(url: str, name: str, items: list[tuple[dict, dict]]) -> float:
    """Enqueues (payload, enqueue_job keyword arguments) pairs; returns jobs/s."""
    pool = await create_pool(settings(url))
    n = len(items)
    t0 = time.perf_counter()
    for start in range(0, n, WINDOW):
        await asyncio.gather(*(pool.enqueue_job("noop", payload, _queue_name=name, **kw)
                               for payload, kw in items[start:start + WINDOW]))
    r = B.rate(n, time.perf_counter() - t0)
    await pool.aclose()
    return r


def plain(n: int) -> list[tuple[dict, dict]]:
    return [(B.PAYLOAD_OBJ, {})] * n


def worker(url: str, name: str, max_jobs: int, burst: bool) -> Worker:
    return Worker(functions=FUNCS, redis_settings=settings(url), queue_name=name, max_jobs=max_jobs,
                  burst=burst, handle_signals=False)


async def work(url: str, n: int, concurrency: int) -> float:
    global _on_job
    name = B.fresh_name(f"arq-c{concurrency}")
    await enqueue_many(url, name, plain(n))
    mark, first = B.timed_first()
    _on_job = lambda payload: mark()  # noqa: E731
    w = worker(url, name, concurrency, burst=True)
    phase = B.Phase(url)
    phase.begin()
    task = asyncio.ensure_future(w.async_run())
    done, _ = await asyncio.wait([task], timeout=CAP_S)
    end = time.perf_counter()
    completed = w.jobs_complete
    DIAG[f"c{concurrency}"] = phase.end(max(1, completed))
    if not done:
        CAPPED.append(f"c{concurrency}")
        print(f"arq: work_c{concurrency} stopped after {CAP_S:.0f} s with {completed} of {n} jobs done",
              file=sys.stderr)
    else:
        assert completed == n, (completed, n)
    await w.close()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return B.rate(completed, end - first())


async def lateness(url: str, spread_ms: int) -> list[float]:
    """One lateness run: each job's argument carries the due ms its _defer_until says."""
    global _on_job
    name = B.fresh_name("arq-late")
    await enqueue_many(url, name, [
        (B.due_payload_obj(due), {"_defer_until": datetime.fromtimestamp(due / 1000, tz=timezone.utc)})
        for due in B.late_dues(spread_ms)])
    late: list[float] = []

    def on_job(payload: dict) -> None:
        t = time.time() * 1000
        late.append(t - payload["due"])

    _on_job = on_job
    w = worker(url, name, B.LATE_CONCURRENCY, burst=True)
    await w.async_run()
    await w.close()
    assert len(late) == B.LATE_JOBS, len(late)
    return late


async def idle(url: str) -> dict:
    w = worker(url, B.fresh_name("arq-idle"), B.IDLE_CONCURRENCY, burst=False)
    task = asyncio.ensure_future(w.async_run())
    await asyncio.sleep(1.0)
    res = await asyncio.to_thread(B.measure_idle, url)
    await w.close()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return res


async def main() -> None:
    url, n = B.usage(__doc__)
    logging.basicConfig(level=logging.WARNING)
    res: dict = {"runtime": "python", "lib": "arq"}
    res["enqueue_seq"] = await enqueue_seq(url, max(1, n // 4))
    res["enqueue_bulk"] = await enqueue_many(url, B.fresh_name("arq-bulk"), plain(n))
    for c in (1, 10, 100):
        res[f"work_c{c}"] = await work(url, n, c)
    if CAPPED:
        res["capped"] = CAPPED
    res["rss_mb"] = B.rss_mb()
    res["diag"] = DIAG
    res.update(B.lateness_summary(await lateness(url, B.LATE_SPREAD_MS)))
    res.update(B.burst_summary(await lateness(url, 0)))
    res.update(await idle(url))
    B.emit(res)


if __name__ == "__main__":
    asyncio.run(main())
