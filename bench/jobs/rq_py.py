"""Job-queue bench of RQ, the same work as tideq_py.py where RQ can do it.

Usage: bench/jobs/.venv-rq/bin/python bench/jobs/rq_py.py URL N   (prints ONE JSON line)

RQ runs one job at a time per worker process, and its default worker forks a "work horse" process
per job; concurrency c is c `rq worker` processes, started as users start them (the `rq worker`
command, `--burst`: each quits when the queue is empty).
- enqueue_seq: N/4 `queue.enqueue(noop, payload)` one after another.
- enqueue_bulk: N jobs through `queue.enqueue_many()` (one pipeline).
- work_c1/c10: N jobs enqueued first, then c `rq worker --burst` processes; jobs/s from the start of
  the processes until the N-th job is in the finished registry (process start-up, ~0.3 s, is
  counted: RQ has no in-process worker at c > 1). Past CAP_S seconds, the jobs finished by then
  (named in "capped"). work_c100 is not run: 100 processes, each forking per job, on this machine
  would measure the machine.
- lateness/burst: 2 000 jobs with `enqueue_at` (RQ's scheduler, `--with-scheduler`, moves due jobs
  every second), 10 worker processes (not 100, as above); each job returns its lateness (handler
  start - its due time, ms), read back from the stored results. Cut off after 2 * CAP_S seconds:
  the percentiles are then of the jobs done by then (named in "capped").
- idle: one `rq worker --with-scheduler` alone on the server for 5 s.
RQ defaults otherwise: results kept 500 s, failures kept 1 year, job timeout 180 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from redis import Redis
from rq import Queue
from rq.job import Job
from rq.registry import FinishedJobRegistry

import benchlib as B

HERE = Path(__file__).resolve().parent
CAP_S = 30.0
CAPPED: list[str] = []
DIAG: dict = {}
LATE_WORKERS = 10
# By import path: the worker processes import this file as `rq_py` (not `__main__`).
NOOP = "rq_py.noop"
LATE = "rq_py.late"


def noop(payload):
    return None


def late(payload):
    return time.time() * 1000 - payload["due"]


def enqueue_seq(conn: Redis, n: int) -> float:
    q = Queue(B.fresh_name("rq-seq"), connection=conn)
    t0 = time.perf_counter()
    for _ in range(n):
        q.enqueue(NOOP, B.PAYLOAD_OBJ)
    return B.rate(n, time.perf_counter() - t0)


def enqueue_many(q: Queue, func: str, items: list[tuple[dict, dict]]) -> tuple[float, list[str]]:
    n = len(items)
    t0 = time.perf_counter()
    jobs = q.enqueue_many([Queue.prepare_data(func, (p,), **kw) for p, kw in items])
    return B.rate(n, time.perf_counter() - t0), [j.id for j in jobs]


def enqueue_at_all(q: Queue, dues: list[int]) -> list[str]:
    pipe = q.connection.pipeline()
    ids = []
    for due in dues:
        job = q.enqueue_at(datetime.fromtimestamp(due / 1000, tz=timezone.utc), LATE, B.due_payload_obj(due),
                           pipeline=pipe)
        ids.append(job.id)
    pipe.execute()
    return ids


def workers(url: str, name: str, count: int, scheduler: bool = False, burst: bool = True) -> list[subprocess.Popen]:
    cmd = [str(Path(sys.executable).parent / "rq"), "worker", "-u", url, "-q", "--logging_level", "WARNING"]
    if burst:
        cmd.append("--burst")
    if scheduler:
        cmd.append("--with-scheduler")
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    return [subprocess.Popen([*cmd, name], cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def work(url: str, conn: Redis, n: int, concurrency: int) -> float:
    name = B.fresh_name(f"rq-c{concurrency}")
    q = Queue(name, connection=conn)
    enqueue_many(q, NOOP, [(B.PAYLOAD_OBJ, {})] * n)
    finished = FinishedJobRegistry(queue=q)
    phase = B.Phase(url)
    phase.begin()
    t0 = time.perf_counter()
    procs = workers(url, name, concurrency)
    done = 0
    while True:
        done = finished.count
        if done >= n or time.perf_counter() - t0 > CAP_S:
            break
        time.sleep(0.01)
    end = time.perf_counter()
    DIAG[f"c{concurrency}"] = phase.end(max(1, done))
    stop(procs)
    if done < n:
        CAPPED.append(f"c{concurrency}")
        print(f"rq: work_c{concurrency} stopped after {CAP_S:.0f} s with {done} of {n} jobs done", file=sys.stderr)
    return B.rate(done, end - t0)


def lateness(url: str, conn: Redis, spread_ms: int) -> list[float]:
    name = B.fresh_name("rq-late")
    q = Queue(name, connection=conn)
    procs = workers(url, name, LATE_WORKERS, scheduler=True, burst=False)
    ids = enqueue_at_all(q, B.late_dues(spread_ms))
    finished = FinishedJobRegistry(queue=q)
    deadline = time.perf_counter() + 2 * CAP_S
    while finished.count < len(ids) and time.perf_counter() < deadline:
        time.sleep(0.05)
    stop(procs)
    if finished.count < len(ids):
        CAPPED.append(f"lateness-{spread_ms}")
        print(f"rq: lateness (spread {spread_ms} ms) stopped after {2 * CAP_S:.0f} s with {finished.count} of "
              f"{len(ids)} jobs done; the percentiles are of those", file=sys.stderr)
    out = [j.return_value() for j in Job.fetch_many(ids, connection=conn) if j is not None]
    return [v for v in out if v is not None]


def idle(url: str) -> dict:
    procs = workers(url, B.fresh_name("rq-idle"), 1, scheduler=True, burst=False)
    time.sleep(1.0)
    try:
        return B.measure_idle(url)
    finally:
        stop(procs)


def main() -> None:
    url, n = B.usage(__doc__)
    conn = Redis.from_url(url)
    res: dict = {"runtime": "python", "lib": "rq"}
    res["enqueue_seq"] = enqueue_seq(conn, max(1, n // 4))
    res["enqueue_bulk"], _ = enqueue_many(Queue(B.fresh_name("rq-bulk"), connection=conn), NOOP,
                                          [(B.PAYLOAD_OBJ, {})] * n)
    for c in (1, 10):
        res[f"work_c{c}"] = work(url, conn, n, c)
    res["rss_mb"] = B.rss_mb()
    res["diag"] = DIAG
    res.update(B.lateness_summary(lateness(url, conn, B.LATE_SPREAD_MS)))
    res.update(B.burst_summary(lateness(url, conn, 0)))
    res.update(idle(url))
    if CAPPED:
        res["capped"] = CAPPED
    B.emit(res)


if __name__ == "__main__":
    main()
