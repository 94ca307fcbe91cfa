"""Job-queue bench of Celery with its Redis broker, the same work as tideq_py.py.

Usage: bench/jobs/.venv-celery/bin/python bench/jobs/celery_py.py URL N   (prints ONE JSON line)

- enqueue_seq: N/4 `noop.apply_async((payload,), queue=...)` one after another.
- enqueue_bulk: Celery has no bulk enqueue: one `group(noop.s(payload) x N).apply_async()`, which
  publishes the N messages one by one on one producer connection.
- work_c1/c10/c100: N jobs enqueued first, then a worker embedded in this process
  (`celery.contrib.testing.worker.start_worker`: the real WorkController in a thread) with the
  "solo" pool at concurrency 1 and the "threads" pool at 10 and 100 (a noop task is not CPU-bound;
  prefork would need the counting across processes); jobs/s from the first task call to the N-th.
- lateness_p50/p99/min_ms and burst_p50/p99_ms: 2 000 jobs with `eta` = their due time (benchlib.py
  describes the method), threads pool at concurrency 100. A Celery worker receives ETA tasks at
  once and holds them in memory until due (so they are not at-least-once while waiting).
- start_p50/p99_ms: enqueue to start (benchlib.py), threads pool at concurrency 10.
- rss_mb after the work runs; idle: one worker (threads, concurrency 10) alone for 5 s.
Celery defaults otherwise: results ignored (no result backend), acks on receipt (acks_late off),
prefetch multiplier 4, JSON serializer.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone

from celery import Celery, group
from celery.contrib.testing.worker import start_worker

import benchlib as B

DIAG: dict = {}
_on_job = lambda payload: None  # noqa: E731  set per measurement

app = Celery("tideq_bench")


@app.task(name="noop", ignore_result=True)
def noop(payload):
    _on_job(payload)


def configure(url: str) -> None:
    app.conf.update(
        broker_url=url,
        result_backend=None,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
    )


def enqueue_seq(n: int) -> float:
    name = B.fresh_name("celery-seq")
    t0 = time.perf_counter()
    for _ in range(n):
        noop.apply_async((B.PAYLOAD_OBJ,), queue=name)
    return B.rate(n, time.perf_counter() - t0)


def enqueue_many(name: str, items: list[tuple[dict, dict]]) -> float:
    """Enqueues (payload, apply_async keyword arguments) pairs in one group; returns jobs/s."""
    n = len(items)
    t0 = time.perf_counter()
    group(noop.s(p).set(queue=name, **kw) for p, kw in items).apply_async()
    return B.rate(n, time.perf_counter() - t0)


def plain(n: int) -> list[tuple[dict, dict]]:
    return [(B.PAYLOAD_OBJ, {})] * n


def embedded(name: str, concurrency: int):
    return start_worker(app, concurrency=concurrency, pool="solo" if concurrency == 1 else "threads",
                        perform_ping_check=False, loglevel="WARNING", queues=[name], shutdown_timeout=60)


def work(url: str, n: int, concurrency: int) -> float:
    global _on_job
    name = B.fresh_name(f"celery-c{concurrency}")
    enqueue_many(name, plain(n))
    mark, first = B.timed_first()
    done = threading.Event()
    count = [0]
    lock = threading.Lock()

    def on_job(_payload) -> None:
        mark()
        with lock:
            count[0] += 1
            if count[0] == n:
                done.set()

    _on_job = on_job
    phase = B.Phase(url)
    phase.begin()
    with embedded(name, concurrency):
        done.wait()
        end = time.perf_counter()
        DIAG[f"c{concurrency}"] = phase.end(n)
    return B.rate(n, end - first())


def lateness(spread_ms: int) -> list[float]:
    global _on_job
    name = B.fresh_name("celery-late")
    late: list[float] = []
    lock = threading.Lock()
    done = threading.Event()

    def on_job(payload: dict) -> None:
        t = time.time() * 1000
        with lock:
            late.append(t - payload["due"])
            if len(late) == B.LATE_JOBS:
                done.set()

    _on_job = on_job
    enqueue_many(name, [(B.due_payload_obj(due), {"eta": datetime.fromtimestamp(due / 1000, tz=timezone.utc)})
                        for due in B.late_dues(spread_ms)])
    with embedded(name, B.LATE_CONCURRENCY):
        done.wait()
    return late


def start_latency() -> list[float]:
    """Enqueue to start (benchlib.py): a waiting worker (threads, concurrency 10), jobs sent one by
    one at 1 000/s."""
    global _on_job
    name = B.fresh_name("celery-start")
    got: list[float] = []
    done = threading.Event()

    def on_job(payload: dict) -> None:
        got.append(time.time() * 1000 - payload["at"])
        if len(got) == B.START_JOBS:
            done.set()

    _on_job = on_job
    with embedded(name, B.START_CONCURRENCY):
        time.sleep(0.5)
        for t in B.paced_times():
            B.wait_until(t)
            noop.apply_async(({"at": time.time() * 1000, **B.PAYLOAD_OBJ},), queue=name)
        done.wait()
    return got


def idle(url: str) -> dict:
    with embedded(B.fresh_name("celery-idle"), B.IDLE_CONCURRENCY):
        time.sleep(1.0)
        return B.measure_idle(url)


def main() -> None:
    url, n = B.usage(__doc__)
    logging.basicConfig(level=logging.WARNING)
    configure(url)
    res: dict = {"runtime": "python", "lib": "celery"}
    res["enqueue_seq"] = enqueue_seq(max(1, n // 4))
    res["enqueue_bulk"] = enqueue_many(B.fresh_name("celery-bulk"), plain(n))
    for c in (1, 10, 100):
        res[f"work_c{c}"] = work(url, n, c)
    res["rss_mb"] = B.rss_mb()
    res["diag"] = DIAG
    res.update(B.lateness_summary(lateness(B.LATE_SPREAD_MS)))
    res.update(B.burst_summary(lateness(0)))
    res.update(B.start_summary(start_latency()))
    res.update(idle(url))
    B.emit(res)


if __name__ == "__main__":
    main()
