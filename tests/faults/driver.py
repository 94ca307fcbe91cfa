"""The fault suite: producers and workers in every runtime on one queue, faults injected while
they run, and a ledger checked at the end.

    .venv/bin/python tests/faults/driver.py            # quick profile (part of `make test`)
    .venv/bin/python tests/faults/driver.py --full     # more jobs, plus the 10-minute soak (`make faults`)
    .venv/bin/python tests/faults/driver.py --only redis_restart,busy_script

Each scenario starts a private redis-server (appendonly yes, appendfsync always: an enqueue
acknowledged before a crash must survive it), one producer per runtime (Python, Node, Rust:
tests/faults/adapter.py, adapter.mjs, core/examples/fault_adapter.rs) and two workers per
runtime, then injects its fault while they run. Every process appends to its own ledger file:
"acked <id>" when an enqueue returned, "done <id>" when a handler ran. At the end:
  lost        acknowledged but never done: must be 0
  duplicated  done more than once: allowed (at-least-once), reported
  unexpected  done but never acknowledged (an enqueue whose reply was lost): reported
Scenario lines and their numbers are printed; the process exits 1 when a job was lost or a
scenario's own check failed.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
PY = str(ROOT / ".venv" / "bin" / "python")
LEASE_MS = 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self, workdir: Path, extra: list[str] | None = None) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.dir = workdir
        self.extra = extra or []
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--save", "", "--appendonly", "yes", "--appendfsync", "always", *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.cli("PING") == "PONG":
                    return
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout.strip()

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def info(self, section: str) -> dict[str, str]:
        out = {}
        for line in self.cli("INFO", section).splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out


def adapter(runtime: str) -> list[str]:
    if runtime == "python":
        return [PY, str(ROOT / "tests/faults/adapter.py")]
    if runtime == "node":
        return ["node", str(ROOT / "tests/faults/adapter.mjs")]
    return [str(TARGET / "debug/examples/fault_adapter")]


RUNTIMES = ["python", "node", "rust"]


class Run:
    """One scenario's processes and ledgers."""

    def __init__(self, redis: Redis, workdir: Path, jobs: int, seconds: float) -> None:
        self.redis, self.dir, self.jobs, self.seconds = redis, workdir, jobs, seconds
        self.queue = f"faults-{random.getrandbits(32):08x}"
        self.producers: list[subprocess.Popen] = []
        self.workers: list[tuple[str, str, subprocess.Popen]] = []
        self.n = 0

    def ledger(self, what: str) -> str:
        self.n += 1
        return str(self.dir / f"{what}-{self.n}.ledger")

    def spawn_worker(self, runtime: str, path: str | None = None) -> None:
        path = path or self.ledger(f"worker-{runtime}")
        cmd = adapter(runtime) + ["worker", self.redis.url, self.queue, path, str(LEASE_MS), "4"]
        log = open(self.dir / f"{Path(path).stem}.log", "ab")
        self.workers.append((runtime, path, subprocess.Popen(cmd, stdout=log, stderr=log)))

    def start(self) -> None:
        for runtime in RUNTIMES:
            for _ in range(2):
                self.spawn_worker(runtime)
        for runtime in RUNTIMES:
            cmd = adapter(runtime) + ["producer", self.redis.url, self.queue,
                                      self.ledger(f"producer-{runtime}"), runtime[:2], str(self.jobs),
                                      str(self.seconds)]
            self.producers.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))

    def producing(self) -> bool:
        return any(p.poll() is None for p in self.producers)

    def read(self) -> tuple[set[str], set[str], collections.Counter]:
        acked, gave_up, done = set(), set(), collections.Counter()
        for f in self.dir.glob("*.ledger"):
            for line in f.read_text().splitlines():
                kind, _, job_id = line.partition(" ")
                if kind == "acked":
                    acked.add(job_id)
                elif kind == "gave_up":
                    gave_up.add(job_id)
                elif kind == "done":
                    done[job_id] += 1
        return acked, gave_up, done

    def wait_done(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.producing():
                acked, _, done = self.read()
                if acked <= set(done):
                    return
            time.sleep(0.2)

    def stop(self) -> None:
        for _, _, p in self.workers:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.send_signal(signal.SIGTERM)
        for p in self.producers:
            if p.poll() is None:
                p.kill()
        deadline = time.time() + 10
        for _, _, p in self.workers:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# ---- faults: each runs in a thread until `stop` is set ------------------------------------


def worker_sigkill(run: Run, stop: threading.Event, notes: dict) -> None:
    kills = 0
    while not stop.wait(1.0):
        alive = [w for w in run.workers if w[2].poll() is None]
        runtime, path, proc = random.choice(alive)
        proc.kill()
        proc.wait()
        kills += 1
        run.spawn_worker(runtime, path)
    notes["workers killed"] = kills


def redis_restart(run: Run, stop: threading.Event, notes: dict) -> None:
    if stop.wait(2.0):
        return
    run.redis.kill()
    time.sleep(0.5)
    run.redis.start()
    notes["redis restarts"] = 1


def worker_sigstop(run: Run, stop: threading.Event, notes: dict) -> None:
    stopped = 0
    while not stop.wait(1.0) and stopped < 2:
        runtime, _, proc = random.choice([w for w in run.workers if w[2].poll() is None])
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(3 * LEASE_MS / 1000)
        os.kill(proc.pid, signal.SIGCONT)
        stopped += 1
    notes["workers frozen past the lease"] = stopped


def redis_sigstop(run: Run, stop: threading.Event, notes: dict) -> None:
    if stop.wait(1.5):
        return
    os.kill(run.redis.proc.pid, signal.SIGSTOP)
    time.sleep(2 * LEASE_MS / 1000)
    os.kill(run.redis.proc.pid, signal.SIGCONT)
    notes["redis frozen (s)"] = 2 * LEASE_MS / 1000


def client_kill(run: Run, stop: threading.Event, notes: dict) -> None:
    kills, spreads = 0, []
    while not stop.wait(2.0):
        before = {line.split()[0] for line in run.redis.cli("CLIENT", "LIST").splitlines()}
        try:
            run.redis.cli("CLIENT", "KILL", "TYPE", "normal")
        except subprocess.CalledProcessError:
            continue
        kills += 1
        # When does each client come back? First sight of every new connection, for 1.5 s.
        t0, seen = time.time(), {}
        while time.time() - t0 < 1.5:
            for line in run.redis.cli("CLIENT", "LIST").splitlines():
                cid = line.split()[0]
                if cid not in before and "cmd=client|list" not in line:
                    seen.setdefault(cid, time.time() - t0)
            time.sleep(0.01)
        if len(seen) > 1:
            times = sorted(seen.values())
            spreads.append(f"{len(times)} back within {1000 * (times[-1] - times[0]):.0f} ms")
    notes["kills"] = kills
    notes["reconnects"] = spreads


def script_flush(run: Run, stop: threading.Event, notes: dict) -> None:
    flushes = 0
    while not stop.wait(0.05):
        try:
            run.redis.cli("SCRIPT", "FLUSH")
            flushes += 1
        except subprocess.CalledProcessError:
            pass
    notes["flushes"] = flushes


def busy_script(run: Run, stop: threading.Event, notes: dict) -> None:
    if stop.wait(1.5):
        return
    before = int(run.redis.info("errorstats").get("errorstat_BUSY", "count=0").split("=")[1].split(",")[0])
    # A foreign script that keeps Redis busy for 2 s: everyone else gets BUSY meanwhile.
    run.redis.cli("EVAL", "local t = redis.call('TIME') local s = t[1] + t[2] / 1e6 "
                  "repeat t = redis.call('TIME') until t[1] + t[2] / 1e6 > s + 2 return 1", "0")
    after = int(run.redis.info("errorstats").get("errorstat_BUSY", "count=0").split("=")[1].split(",")[0])
    notes["BUSY replies during 2 s"] = after - before
    # No tight retry loop: a few per client and second, not thousands.
    notes["check"] = (after - before) < 2000


SCENARIOS = {
    "worker_sigkill": (worker_sigkill, []),
    "redis_restart": (redis_restart, []),
    "worker_sigstop": (worker_sigstop, []),
    "redis_sigstop": (redis_sigstop, []),
    "client_kill": (client_kill, []),
    "script_flush": (script_flush, []),
    "busy_script": (busy_script, ["--busy-reply-threshold", "100"]),
}


def scenario(name: str, jobs: int, seconds: float) -> bool:
    fault, extra = SCENARIOS[name]
    work = Path(tempfile.mkdtemp(prefix=f"tideq-faults-{name}-"))
    redis = Redis(work, extra)
    run = Run(redis, work, jobs, seconds)
    notes: dict = {}
    stop = threading.Event()
    t0 = time.time()
    try:
        run.start()
        injector = threading.Thread(target=fault, args=(run, stop, notes))
        injector.start()
        while run.producing() and time.time() - t0 < 120:
            time.sleep(0.1)
        stop.set()
        injector.join()
        if redis.proc is None:
            redis.start()
        run.wait_done(90)
    finally:
        stop.set()
        run.stop()
        acked, gave_up, done = run.read()
        redis.kill()
    lost = sorted(acked - set(done))
    duplicated = sum(1 for c in done.values() if c > 1)
    unexpected = len(set(done) - acked)
    ok = not lost and notes.pop("check", True)
    print(f"{'ok  ' if ok else 'FAIL'} {name:<15} acked {len(acked):>5}  done {len(done):>5}  "
          f"lost {len(lost)}  duplicated {duplicated}  unexpected {unexpected}  gave up {len(gave_up)}  "
          f"{time.time() - t0:4.1f}s  {notes}", flush=True)
    if lost:
        print(f"     lost ids (first 10): {lost[:10]}; logs in {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return ok


def soak(minutes: float) -> bool:
    """Steady production and processing for `minutes`: Redis memory and key count stay flat."""
    work = Path(tempfile.mkdtemp(prefix="tideq-soak-"))
    redis = Redis(work)
    run = Run(redis, work, 10**9, 10**9 / 300)
    samples = []
    t0 = time.time()
    try:
        run.start()
        while time.time() - t0 < minutes * 60:
            time.sleep(15)
            mem = int(redis.info("memory")["used_memory"])
            keys = int(redis.cli("DBSIZE"))
            samples.append((time.time() - t0, mem, keys))
            print(f"     soak {samples[-1][0]:5.0f}s  used_memory {mem / 1e6:6.1f} MB  keys {keys}", flush=True)
    finally:
        run.stop()
        acked, _, done = run.read()
        redis.kill()
    warm = [s for s in samples if s[0] > 180] or samples
    mems = [s[1] for s in warm]
    keys = [s[2] for s in warm]
    flat = max(mems) <= 1.5 * min(mems) + 5e6 and max(keys) <= min(keys) + 20
    print(f"{'ok  ' if flat else 'FAIL'} soak {minutes:.0f} min: {len(done)} jobs done; after warm-up memory "
          f"{min(mems) / 1e6:.1f}-{max(mems) / 1e6:.1f} MB, keys {min(keys)}-{max(keys)}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return flat


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="more jobs per producer, and the soak")
    ap.add_argument("--only", default="", help="comma-separated scenario names (or 'soak')")
    ap.add_argument("--soak-minutes", type=float, default=10)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "-p", "tideq", "--example", "fault_adapter"], cwd=ROOT, check=True)
    names = [n for n in args.only.split(",") if n] or list(SCENARIOS)
    jobs, seconds = (3000, 30) if args.full else (150, 8)
    print(f"fault suite: {jobs} jobs per producer (Python, Node, Rust) over {seconds} s, 2 workers per "
          f"runtime, lease {LEASE_MS} ms", flush=True)
    ok = True
    for name in names:
        if name != "soak":
            ok &= scenario(name, jobs, seconds)
    if args.full or "soak" in names:
        ok &= soak(args.soak_minutes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
