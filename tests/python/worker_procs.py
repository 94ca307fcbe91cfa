"""What the tests of ``tideq worker`` share (tests/python/test_worker_command.py and the long
variants, tests/python/workers_long.py): the task module they run, written to a temporary folder;
the ledger its handler keeps (a line per job start and end, appended by every process to one
file); the supervisor started as a process, and its children read from /proc."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

# The task module: `queue` (a Queue of the name in TQ_QUEUE on TIDEQ_REDIS_URL) with one task,
# `work`, which notes its start and end in the ledger (TQ_LEDGER, O_APPEND: one write per line,
# whole lines from every process), and in between burns `cpu_ms` of CPU holding the GIL (small
# hashlib updates never release it), sleeps `sleep_ms`, and keeps `leak_mb` more memory.
TASKS = textwrap.dedent('''
    import hashlib, os, time
    import tideq

    queue = tideq.Queue(os.environ["TQ_QUEUE"], url=os.environ["TIDEQ_REDIS_URL"],
                        max_attempts=100)
    LEDGER = os.environ["TQ_LEDGER"]
    KEPT = []

    def note(kind, key):
        fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{kind} {key} {os.getpid()} {time.time():.6f}\\n".encode())
        finally:
            os.close(fd)

    @queue.task
    def work(i, cpu_ms=0, sleep_ms=0, leak_mb=0):
        note("start", i)
        end = time.thread_time() + cpu_ms / 1000
        h = b"x"
        while time.thread_time() < end:
            for _ in range(100):
                h = hashlib.sha256(h).digest()
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        if leak_mb:
            KEPT.append(b"\\x01" * (leak_mb << 20))
        note("end", i)
''')


def tideq_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m tideq._cli``."""
    script = os.path.join(os.path.dirname(sys.executable), "tideq")
    if os.path.exists(script):
        return [script]
    found = shutil.which("tideq")
    return [found] if found else [sys.executable, "-m", "tideq._cli"]


class Ledger:
    """The start and end lines the task module's handler wrote: (kind, job, pid, time)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[str, str, int, float]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            kind, key, pid, t = line.split()
            out.append((kind, key, int(pid), float(t)))
        return out

    def ended(self) -> set[str]:
        return {k for kind, k, _, _ in self.lines() if kind == "end"}

    def started(self) -> int:
        return sum(1 for kind, *_ in self.lines() if kind == "start")

    def pids(self) -> set[int]:
        return {pid for _, _, pid, _ in self.lines()}

    def check_never_twice_at_once(self, killed: dict[int, float]) -> None:
        """No job ran in two places at once: each run (a start, then its end in the same
        process, or the kill of that process: ``killed`` pid → time) is over before the job's
        next run starts."""
        runs: dict[str, list[list[Any]]] = defaultdict(list)  # job → [[pid, start, end]]
        for kind, key, pid, t in self.lines():
            if kind == "start":
                for run in runs[key]:
                    over = run[2] if run[2] is not None else killed.get(run[0])
                    assert over is not None and over <= t, (
                        f"job {key} started in {pid} at {t} while its run in {run[0]} "
                        f"(from {run[1]}) was not over")
                runs[key].append([pid, t, None])
            else:
                open_runs = [r for r in runs[key] if r[0] == pid and r[2] is None]
                assert open_runs, f"job {key}: an end in {pid} without a start"
                open_runs[-1][2] = t

    def most_at_once(self) -> int:
        """The most jobs that ran at the same time (by the lines' order)."""
        now = most = 0
        for kind, *_ in self.lines():
            now += 1 if kind == "start" else -1
            most = max(most, now)
        return most


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (zombies left out)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return sorted(out)


def rss_mb(pid: int) -> float:
    """The resident set of ``pid`` in MiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except OSError:
        return 0.0


class Supervisor:
    """``tideq worker ARGS`` started in ``folder`` (where the task module is), its output in
    files there."""

    def __init__(self, folder: Path, *args: str, env: Optional[dict[str, str]] = None) -> None:
        self.folder = folder
        self.out = open(folder / "supervisor.out", "w")
        self.err = open(folder / "supervisor.err", "w")
        self.proc = subprocess.Popen([*tideq_command(), "worker", *args], cwd=folder,
                                     stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})})

    @property
    def pid(self) -> int:
        return self.proc.pid

    def children(self) -> list[int]:
        return children(self.proc.pid)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        self.err.flush()
        return (self.folder / "supervisor.err").read_text()

    def stop(self) -> None:
        """Ends it if it still runs (SIGTERM, then SIGKILL of it and its children)."""
        if self.proc.poll() is None:
            kids = self.children()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                for k in kids + self.children():
                    try:
                        os.kill(k, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        self.err.close()


def wait_for(cond: Any, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return bool(cond())
