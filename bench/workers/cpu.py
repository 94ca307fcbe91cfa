"""CPU-bound Python jobs under `tideq worker`: `--processes 1` against `--processes 2`.

Usage: .venv/bin/python bench/workers/cpu.py [--jobs 2000] [--cpu-ms 5] [--concurrency 10]
(or `make bench-workers`; `make bench-workers SMOKE=1` runs 200 jobs)

Each job burns `--cpu-ms` of CPU in hashlib, holding the GIL (32-byte updates never release it),
so one process runs one job at a time however many threads it has. For each process count, on a
private redis-server: start `tideq worker bench_tasks:queue --processes P --concurrency C`, wait
until its P workers are live (`queue.workers()`) with the jobs enqueued on the paused queue, then
resume it and time until every job completed. Prints jobs/s for each and the ratio (the goal: at least 1.7 on two
free cores).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench" / "jobs"))
from run import Redis  # noqa: E402

import tideq  # noqa: E402

TASKS = '''
import hashlib, os, time
import tideq

queue = tideq.Queue(os.environ["BENCH_QUEUE"], url=os.environ["TIDEQ_REDIS_URL"])
CPU_S = float(os.environ["BENCH_CPU_MS"]) / 1000

@queue.task
def burn(i):
    end = time.thread_time() + CPU_S
    h = b"x"
    while time.thread_time() < end:
        for _ in range(100):
            h = hashlib.sha256(h).digest()
'''


def command() -> list[str]:
    script = Path(sys.executable).parent / "tideq"
    if script.exists():
        return [str(script)]
    found = shutil.which("tideq")
    return [found] if found else [sys.executable, "-m", "tideq._cli"]


def run(url: str, folder: Path, processes: int, jobs: int, cpu_ms: float, conc: int,
        direct: bool) -> float:
    name = f"bench-cpu-{uuid.uuid4().hex[:8]}"
    q = tideq.Queue(name, url=url)
    q.pause()
    for i in range(jobs):
        q.enqueue_task("burn", {"i": i})
    env = {**os.environ, "BENCH_QUEUE": name, "TIDEQ_REDIS_URL": url, "BENCH_CPU_MS": str(cpu_ms)}
    if direct:  # the worker processes without their supervisor
        argvs = [[sys.executable, "-m", "tideq._worker", "bench_tasks:queue", "--concurrency",
                  str(conc)]] * processes
    else:
        argvs = [[*command(), "worker", "bench_tasks:queue", "--processes", str(processes),
                  "--concurrency", str(conc)]]
    procs = [subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for argv in argvs]

    def exited(what: str) -> None:
        for p in procs:
            if p.poll() is not None:
                sys.exit(f"{what}:\n{p.stderr.read() if p.stderr else ''}")

    try:
        deadline = time.monotonic() + 60
        while len(q.workers()) < processes:
            exited("a worker process exited at start")
            if time.monotonic() > deadline:
                sys.exit("the workers did not start within 60 s")
            time.sleep(0.05)
        t0 = time.monotonic()
        q.resume()
        while q.stats().completed < jobs:
            exited("a worker process exited")
            time.sleep(0.02)
        return jobs / (time.monotonic() - t0)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--cpu-ms", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--direct", action="store_true",
                    help="start the worker processes (python -m tideq._worker) without tideq "
                         "worker's supervisor")
    a = ap.parse_args()
    redis = Redis()
    folder = Path(tempfile.mkdtemp(prefix="tideq-bench-workers-"))
    (folder / "bench_tasks.py").write_text(TASKS)
    try:
        rates = {}
        for p in (1, 2):
            rates[p] = run(redis.url, folder, p, a.jobs, a.cpu_ms, a.concurrency, a.direct)
            print(f"--processes {p}: {rates[p]:.0f} jobs/s ({a.jobs} jobs of {a.cpu_ms:g} ms "
                  f"CPU, --concurrency {a.concurrency})", flush=True)
        print(f"ratio 2/1: {rates[2] / rates[1]:.2f} (on {os.cpu_count()} cores)")
    finally:
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
