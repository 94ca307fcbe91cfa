"""``tideq worker`` from the Python package: the supervisor and its children (fresh interpreters
running tideq._worker) as real processes, against a real redis-server. Each test names the
failure it rules out. The long variants (kills every second for 30 s over 20,000 jobs) are
tests/python/workers_long.py (`make workers-long`)."""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

import tideq
from tideq_harness import free_port
from worker_procs import TASKS, Ledger, Supervisor, rss_mb, wait_for

class Setup:
    """A task module in a folder of the test's own, its queue and ledger, and the supervisors
    started (stopped when the test ends)."""

    def __init__(self, folder: Path, url: str) -> None:
        self.folder = folder
        self.url = url
        self.name = f"workers-{uuid.uuid4().hex}"
        (folder / "tasks.py").write_text(TASKS)
        self.ledger = Ledger(folder / "ledger")
        self.queue = tideq.Queue(self.name, url=url)
        self.env = {"TQ_QUEUE": self.name, "TIDEQ_REDIS_URL": url,
                    "TQ_LEDGER": str(self.ledger.path)}
        self.started: list[Supervisor] = []

    def run(self, *args: str) -> Supervisor:
        sup = Supervisor(self.folder, *args, env=self.env)
        self.started.append(sup)
        return sup

    def completed(self) -> int:
        return self.queue.stats().completed

    def stop(self) -> None:
        for sup in self.started:
            sup.stop()


@pytest.fixture
def setup(tmp_path: Path, redis_url: str) -> Iterator[Setup]:
    s = Setup(tmp_path, redis_url)
    try:
        yield s
    finally:
        s.stop()


def enqueue(setup: Setup, n: int, **data: Any) -> None:
    """``n`` runs of the task ``work`` (ids job-0...), in batches of 500."""
    for start in range(0, n, 500):
        for i in range(start, min(n, start + 500)):
            setup.queue.enqueue_task("work", {"i": i, **data}, id=f"job-{i}")


def all_done(setup: Setup, n: int, timeout: float) -> bool:
    return wait_for(lambda: setup.completed() >= n, timeout, interval=0.2)


def test_two_processes_run_every_job_once_and_sigterm_exits_0(setup: Setup) -> None:
    enqueue(setup, 300, cpu_ms=2)
    sup = setup.run("tasks:queue", "--processes", "2")
    assert all_done(setup, 300, 60), (setup.completed(), sup.stderr())
    assert wait_for(lambda: len(sup.children()) == 2, 10), sup.stderr()
    assert len(setup.ledger.ended()) == 300
    setup.ledger.check_never_twice_at_once({})
    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.stderr()
    assert setup.completed() == 300


def test_sigterm_mid_run_drains_every_started_job_and_exits_0_within_the_grace(
        setup: Setup) -> None:
    enqueue(setup, 40, sleep_ms=1500)
    sup = setup.run("tasks:queue", "--processes", "2", "--concurrency", "3",
                    "--shutdown-grace", "10")
    assert wait_for(lambda: setup.ledger.started() >= 6, 30), sup.stderr()
    sup.signal(signal.SIGTERM)
    t0 = time.monotonic()
    assert sup.wait(25) == 0, sup.stderr()
    assert time.monotonic() - t0 < 15
    lines = setup.ledger.lines()
    started = {k for kind, k, _, _ in lines if kind == "start"}
    assert started == setup.ledger.ended(), "a started job did not finish"
    stats = setup.queue.stats()
    assert stats.active == 0 and stats.completed == len(started)
    assert stats.ready == 40 - len(started)


def test_sigkill_of_a_child_every_second_loses_no_job_and_runs_none_twice_at_once(
        setup: Setup) -> None:
    n = 3000
    enqueue(setup, n, sleep_ms=20)
    sup = setup.run("tasks:queue", "--processes", "2", "--concurrency", "4")
    assert wait_for(lambda: setup.ledger.started() > 0 and len(sup.children()) == 2, 30), \
        sup.stderr()
    killed: dict[int, float] = {}
    for _ in range(8):
        kids = sup.children()
        if kids:
            killed[kids[0]] = time.time()
            os.kill(kids[0], signal.SIGKILL)
        time.sleep(1)
    # The killed children's jobs come back once their leases (30 s) expire.
    assert all_done(setup, n, 120), (setup.completed(), sup.stderr()[-2000:])
    assert setup.ledger.ended() == {str(i) for i in range(n)}
    setup.ledger.check_never_twice_at_once(killed)
    assert wait_for(lambda: len(sup.children()) == 2, 30), sup.children()
    stats = setup.queue.stats()
    assert stats.dead == 0 and stats.ready == 0 and stats.active == 0
    sup.signal(signal.SIGTERM)
    assert sup.wait(30) == 0, sup.stderr()[-2000:]


def test_a_leaking_child_is_recycled_above_its_memory_limit_and_no_job_is_lost(
        setup: Setup) -> None:
    n = 120
    enqueue(setup, n, leak_mb=5, sleep_ms=100)
    sup = setup.run("tasks:queue", "--concurrency", "1", "--max-memory-per-process", "200MB")
    most = 0.0
    deadline = time.monotonic() + 120
    while setup.completed() < n and time.monotonic() < deadline:
        most = max([most, *(rss_mb(k) for k in sup.children())])
        time.sleep(0.1)
    assert setup.completed() == n, sup.stderr()[-2000:]
    assert setup.ledger.ended() == {str(i) for i in range(n)}
    setup.ledger.check_never_twice_at_once({})
    assert len(setup.ledger.pids()) >= 3, "no child was recycled"
    assert most < 400, f"a child reached {most:.0f} MiB"


def test_a_child_is_recycled_after_its_max_jobs_exactly(setup: Setup) -> None:
    n = 100
    enqueue(setup, n)
    sup = setup.run("tasks:queue", "--concurrency", "4", "--max-jobs-per-process", "30")
    assert all_done(setup, n, 60), sup.stderr()[-2000:]
    per_pid: dict[int, int] = {}
    for kind, _, pid, _ in setup.ledger.lines():
        if kind == "start":
            per_pid[pid] = per_pid.get(pid, 0) + 1
    assert len(per_pid) >= 4 and max(per_pid.values()) <= 30, per_pid
    setup.ledger.check_never_twice_at_once({})


BROKEN = {
    "syntax": ("def work(:\n    pass\n", "SyntaxError"),
    "import": ("import os\nopen(os.environ['TQ_LEDGER'], 'a').write('start x 0 0\\n')\n"
               "import no_such_module_anywhere\n", "No module named 'no_such_module_anywhere'"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_task_module_stops_the_command_with_its_error_after_few_children(
        setup: Setup, kind: str) -> None:
    source, error = BROKEN[kind]
    (setup.folder / "broken.py").write_text(source)
    sup = setup.run("broken:queue", "--processes", "2")
    code = sup.wait(30)
    assert code != 0
    assert error in sup.stderr(), sup.stderr()
    assert "Traceback" not in sup.stderr() or "importlib" not in sup.stderr()
    if kind == "import":
        assert 1 <= setup.ledger.started() <= 3, setup.ledger.started()


def test_sighup_replaces_every_child_and_loses_no_job(setup: Setup) -> None:
    n = 400
    enqueue(setup, n, sleep_ms=50)
    sup = setup.run("tasks:queue", "--processes", "2", "--concurrency", "2")
    assert wait_for(lambda: setup.ledger.started() > 10 and len(sup.children()) == 2, 30)
    old = set(sup.children())
    sup.signal(signal.SIGHUP)
    assert wait_for(lambda: not old & set(sup.children()) and len(sup.children()) == 2, 60), (
        old, sup.children(), sup.stderr()[-2000:])
    assert all_done(setup, n, 120), sup.stderr()[-2000:]
    assert setup.ledger.ended() == {str(i) for i in range(n)}
    setup.ledger.check_never_twice_at_once({})
    assert setup.queue.stats().dead == 0


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def test_readyz_is_503_while_redis_is_down_and_200_once_it_is_back(
        tmp_path: Path, private_redis: Any) -> None:
    server = private_redis()
    setup = Setup(tmp_path, server.url)
    port = free_port()
    try:
        sup = setup.run("tasks:queue", "--processes", "2", "--health", f"127.0.0.1:{port}")
        ready = f"http://127.0.0.1:{port}/readyz"
        assert wait_for(lambda: status(ready) == 200, 30), sup.stderr()[-2000:]
        assert status(f"http://127.0.0.1:{port}/livez") == 200
        server.proc.kill()
        server.proc.wait()
        assert wait_for(lambda: status(ready) == 503, 30), sup.stderr()[-2000:]
        assert status(f"http://127.0.0.1:{port}/livez") == 200
        server._spawn()
        assert wait_for(lambda: status(ready) == 200, 60), sup.stderr()[-2000:]
    finally:
        setup.stop()


TWO_QUEUES = """
import os, time
import tideq
from tasks import note

url = os.environ["TIDEQ_REDIS_URL"]
emails = tideq.Queue(os.environ["TQ_QUEUE"] + "-emails", url=url)
reports = tideq.Queue(os.environ["TQ_QUEUE"] + "-reports", url=url)

@emails.task
def send(i):
    note("start", f"e{i}"); time.sleep(0.05); note("end", f"e{i}")

@reports.task
def build(i):
    note("start", f"r{i}"); time.sleep(0.05); note("end", f"r{i}")
"""


def test_one_process_serves_two_queues_each_at_its_own_concurrency(setup: Setup) -> None:
    (setup.folder / "two.py").write_text(TWO_QUEUES)
    emails = tideq.Queue(setup.name + "-emails", url=setup.url)
    reports = tideq.Queue(setup.name + "-reports", url=setup.url)
    for i in range(30):
        emails.enqueue_task("send", {"i": i})
        reports.enqueue_task("build", {"i": i})
    sup = setup.run("two", "--queues", f"{emails.name}=2,{reports.name}=1")
    assert wait_for(lambda: emails.stats().completed == 30 and reports.stats().completed == 30,
                    60), sup.stderr()[-2000:]
    assert len(setup.ledger.pids()) == 1
    lines = setup.ledger.lines()
    for prefix, most in (("e", 2), ("r", 1)):
        now = top = 0
        for kind, key, _, _ in lines:
            if key.startswith(prefix):
                now += 1 if kind == "start" else -1
                top = max(top, now)
        assert top <= most, (prefix, top)
