"""``tideq.serve`` / ``serve_async`` (a worker process's main), the workers' ``max_jobs`` and
``is_ready()``, against real redis-servers."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

import tideq
from tideq_harness import free_port, wait_for


def fill(q: tideq.Queue, n: int) -> None:
    q.enqueue_many([str(i).encode() for i in range(n)])


def test_max_jobs_leases_exactly_that_many_then_the_worker_stops_by_itself(
        client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    fill(q, 20)
    ran: list[bytes] = []
    w = q.work(lambda job: ran.append(job.payload), concurrency=4, max_jobs=7)
    stats = w.join(timeout=30)
    assert not w.running and w.error is None
    assert stats.completed == 7 and len(ran) == 7
    assert q.stats().ready == 13


def test_max_jobs_of_run_tasks_and_batches_is_exact_too(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    for i in range(10):
        q.enqueue_task("t", {"i": i})
    stats = q.run_tasks({"t": lambda i: None}, concurrency=3, max_jobs=4)
    assert stats.completed == 4
    stats = q.run_batches(lambda jobs: None, size=2, concurrency=4, max_jobs=3)
    assert stats.completed == 3
    assert q.stats().ready == 3


@pytest.mark.parametrize("bad", [0, -1])
def test_a_max_jobs_below_1_is_refused(client: tideq.Client, name: str, bad: int) -> None:
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.InvalidArgumentError, match="max_jobs"):
        q.work(lambda job: None, max_jobs=bad)


def test_is_ready_is_false_while_redis_is_down_and_true_once_it_is_back(
        private_redis: Any, name: str) -> None:
    server = private_redis()
    q = tideq.Queue(name, url=server.url)
    w = q.work(lambda job: None, poll_interval=0.2)
    try:
        assert wait_for(w.is_ready, 10)
        server.proc.kill()
        server.proc.wait()
        assert wait_for(lambda: not w.is_ready(), 20)
        server._spawn()
        assert wait_for(w.is_ready, 30)
    finally:
        w.shutdown()
    assert not w.is_ready()


def test_serve_returns_every_workers_stats_once_they_stopped_by_themselves(
        client: tideq.Client, name: str) -> None:
    a, b = tideq.Queue(name + "-a", client), tideq.Queue(name + "-b", client)
    fill(a, 5)
    fill(b, 5)
    wa = a.work(lambda job: None, max_jobs=3)
    wb = b.work(lambda job: None, max_jobs=2)
    stats = tideq.serve(wa, wb)
    assert [s.completed for s in stats] == [3, 2]
    assert all(isinstance(s, tideq.WorkerStats) for s in stats)


def test_serve_with_max_jobs_stops_every_worker_once_they_leased_that_many_together(
        client: tideq.Client, name: str) -> None:
    a, b = tideq.Queue(name + "-a", client), tideq.Queue(name + "-b", client)
    fill(a, 50)
    fill(b, 50)
    stats = tideq.serve(a.work(lambda job: time.sleep(0.01), concurrency=1, batch_size=1),
                        b.work(lambda job: time.sleep(0.01), concurrency=1, batch_size=1),
                        max_jobs=10)
    done = sum(s.completed for s in stats)
    assert 10 <= done < 100


def test_serve_refuses_what_is_not_a_worker_and_bad_options(client: tideq.Client,
                                                           name: str) -> None:
    with pytest.raises(TypeError, match="serve takes the workers"):
        tideq.serve("worker")  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError, match="at least one worker"):
        tideq.serve()
    w = tideq.Queue(name, client).work(lambda job: None)
    try:
        with pytest.raises(tideq.InvalidArgumentError, match="health"):
            tideq.serve(w, health="not an address")
        with pytest.raises(tideq.InvalidArgumentError, match="max_jobs"):
            tideq.serve(w, max_jobs=0)
    finally:
        w.shutdown()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def test_serve_answers_livez_and_readyz_while_serving(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    w = q.work(lambda job: None, poll_interval=0.2)
    port = free_port()
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(tideq.serve(w, health=f"127.0.0.1:{port}")))
    t.start()
    try:
        assert wait_for(lambda: status(f"http://127.0.0.1:{port}/readyz") == 200, 10)
        assert status(f"http://127.0.0.1:{port}/livez") == 200
    finally:
        w.stop()
        t.join(30)
    assert len(out) == 1
    assert status(f"http://127.0.0.1:{port}/livez") == 0  # no longer served


SERVE_SCRIPT = """
import asyncio, sys, time, tideq
url, name, mode, health = sys.argv[1:]
def slow(job):
    time.sleep(1)
async def aslow(job):
    await asyncio.sleep(1)
if mode == "async":
    async def main():
        q = tideq.AsyncQueue(name, url=url)
        await q.enqueue_many([b"1", b"2"])
        w = q.work(aslow, concurrency=2)
        return await tideq.serve_async(w, health=health)
    stats = asyncio.run(main())
else:
    q = tideq.Queue(name, url=url)
    q.enqueue_many([b"1", b"2"])
    w = q.work(slow, concurrency=2)
    stats = tideq.serve(w, health=health)
print("stopped", stats[0].completed, flush=True)
"""


@pytest.mark.parametrize("mode,sig", [("blocking", signal.SIGTERM), ("blocking", signal.SIGINT),
                                      ("async", signal.SIGTERM), ("async", signal.SIGINT)])
def test_serve_stops_gracefully_on_sigint_and_sigterm_finishing_running_jobs(
        redis_url: str, name: str, mode: str, sig: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT, redis_url, name, mode,
                             f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # /readyz answers 200 once serve's loop runs (its signal handlers are in place).
        assert wait_for(lambda: status(f"http://127.0.0.1:{port}/readyz") == 200, 20)
        q = tideq.Queue(name, url=redis_url)
        assert wait_for(lambda: q.stats().active == 2, 10)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopped 2" in out, (out, err)


def test_serve_async_returns_the_stats_of_workers_that_stopped_by_themselves(
        client: tideq.Client, name: str) -> None:
    async def main() -> list[tideq.WorkerStats]:
        q = tideq.AsyncQueue(name, client)
        await q.enqueue_many([b"a", b"b", b"c"])

        async def handler(job: tideq.Job) -> None:
            await asyncio.sleep(0)

        w = q.work(handler, max_jobs=2)
        assert not w.is_ready() or w.running
        return await tideq.serve_async(w)

    stats = asyncio.run(main())
    assert [s.completed for s in stats] == [2]
