"""Job-queue bench of BullMQ's Python port (PyPI `bullmq`), the same work as tideq_py.py.

Usage: bench/jobs/.venv/bin/python bench/jobs/bullmq_py.py URL N   (prints ONE JSON line)

- enqueue_seq: N/4 `await queue.add()` one after another.
- enqueue_bulk: N jobs in one `await queue.addBulk()`.
- work_c1/c10/c100: N jobs added first, then a Worker with that concurrency; jobs/s from the first
  processor call to the N-th "completed" event (emitted after moveToCompleted).
- lateness_p50/p99/min_ms: 2 000 jobs in one addBulk, job i due at start + i * 0.5 ms (due times
  spread evenly over one second, start ~2 s ahead) through a per-job `delay` = due - now, each
  carrying its due ms in `job.data` (`{"due": <ms>, ...}`); Worker concurrency 100; the processor
  reads the clock, then `job.data["due"]`: lateness = processor start - that job's due time (ms,
  this machine's clock).
- burst_p50/p99_ms: the same with all 2 000 due at one instant (benchlib.py describes the method).
- rss_mb after the work runs; idle: one Worker (concurrency 10) alone on the server for 5 s.
Job options: removeOnComplete 1000 (the same bound as tideq's keep_completed default); otherwise
BullMQ's defaults (attempts 1, lockDuration 30 s, stalledInterval 30 s, drainDelay 5 s).
"""

from __future__ import annotations

import asyncio
import logging
import time

from bullmq import Queue, Worker

import benchlib as B

JOB_OPTS = {"removeOnComplete": 1000}
DIAG: dict = {}


async def enqueue_seq(url: str, n: int) -> float:
    q = Queue(B.fresh_name("bmqpy-seq"), {"connection": url})
    t0 = time.perf_counter()
    for _ in range(n):
        await q.add("job", B.PAYLOAD_OBJ, JOB_OPTS)
    r = B.rate(n, time.perf_counter() - t0)
    await q.close()
    return r


async def bulk(url: str, name: str, jobs: list[dict]) -> float:
    q = Queue(name, {"connection": url})
    t0 = time.perf_counter()
    await q.addBulk(jobs)
    r = B.rate(len(jobs), time.perf_counter() - t0)
    await q.close()
    return r


def bulk_jobs(n: int, opts: dict = JOB_OPTS) -> list[dict]:
    return [{"name": "job", "data": B.PAYLOAD_OBJ, "opts": opts} for _ in range(n)]


async def run_worker(url: str, name: str, n: int, concurrency: int, on_job) -> float:
    """Runs a Worker until n jobs completed (on_job(job) first in each processor call); returns
    the time of the n-th completion."""
    done = asyncio.Event()
    count = 0
    end = 0.0

    def completed(job, result) -> None:
        nonlocal count, end
        count += 1
        if count == n:
            end = time.perf_counter()
            done.set()

    async def process(job, token):
        on_job(job)
        return None

    worker = Worker(name, process, {"connection": url, "concurrency": concurrency})
    worker.on("completed", completed)
    await done.wait()
    await worker.close()
    return end


async def work(url: str, n: int, concurrency: int) -> float:
    name = B.fresh_name(f"bmqpy-c{concurrency}")
    await bulk(url, name, bulk_jobs(n))
    mark, first = B.timed_first()
    phase = B.Phase(url)
    phase.begin()
    end = await run_worker(url, name, n, concurrency, lambda job: mark())
    DIAG[f"c{concurrency}"] = phase.end(n)
    return B.rate(n, end - first())


async def lateness(url: str, spread_ms: int) -> list[float]:
    """One lateness run: each job's data carries the due ms its delay aims at."""
    name = B.fresh_name("bmqpy-late")
    dues = B.late_dues(spread_ms)
    q = Queue(name, {"connection": url})
    # One addBulk; each job's delay is computed against the same "now".
    now = round(time.time() * 1000)
    await q.addBulk([{"name": "job", "data": B.due_payload_obj(due),
                      "opts": {**JOB_OPTS, "delay": max(0, due - now)}} for due in dues])
    await q.close()
    late: list[float] = []

    def on_job(job) -> None:
        t = time.time() * 1000
        late.append(t - job.data["due"])

    await run_worker(url, name, B.LATE_JOBS, B.LATE_CONCURRENCY, on_job)
    return late


async def idle(url: str) -> dict:
    async def process(job, token):
        return None

    worker = Worker(B.fresh_name("bmqpy-idle"), process, {"connection": url, "concurrency": B.IDLE_CONCURRENCY})
    await asyncio.sleep(1.0)
    res = await asyncio.to_thread(B.measure_idle, url)
    await worker.close()
    return res


async def main() -> None:
    url, n = B.usage(__doc__)
    logging.basicConfig(level=logging.WARNING)
    res: dict = {"runtime": "python", "lib": "bullmq-py"}
    res["enqueue_seq"] = await enqueue_seq(url, max(1, n // 4))
    res["enqueue_bulk"] = await bulk(url, B.fresh_name("bmqpy-bulk"), bulk_jobs(n))
    for c in (1, 10, 100):
        res[f"work_c{c}"] = await work(url, n, c)
    res["rss_mb"] = B.rss_mb()
    res["diag"] = DIAG
    res.update(B.lateness_summary(await lateness(url, B.LATE_SPREAD_MS)))
    res.update(B.burst_summary(await lateness(url, 0)))
    res.update(await idle(url))
    B.emit(res)


if __name__ == "__main__":
    asyncio.run(main())
