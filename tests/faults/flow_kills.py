"""A flow of 10,000 children across 4 shards while the children's workers are SIGKILLed every
second: the parent (a chord's callback) must run exactly once, after the last child, with every
child's result in order.

    .venv/bin/python tests/faults/flow_kills.py [--children N]

A private redis-server (appendonly, fsync always); the flow is enqueued from Python; two Python
and two Node worker processes run the children (task `part`: i -> 2*i) on a 4-shard queue, one
of them SIGKILLed and restarted every second until the parent has run; one Python worker (never
killed) runs the parent. Each process appends to a ledger. Checks: the parent started once, saw
N results equal to [0, 2, 4, ...], and completed; every child ran; after the parent ran, it
never runs again. Prints the kills, the children run twice (at-least-once: allowed, reported)
and the time taken; exits 1 on a failed check.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from driver import PY, ROOT, Redis  # noqa: E402

import tideq  # noqa: E402

PARENTS, PARTS = "flowk-parents", "flowk-parts"


def parts_worker(url: str, ledger: str) -> None:
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def handle(job: tideq.Job) -> int:
        os.write(fd, f"done {job.id}\n".encode())
        return int(job.args()) * 2

    tideq.Queue(PARTS, url=url, shards=4).run(handle, concurrency=8, lease=1.0, grace=1.0)


def parent_worker(url: str, ledger: str) -> None:
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def collect(results: list) -> int:
        ok = results == [2 * i for i in range(len(results))]
        os.write(fd, f"parent {time.time():.6f} {len(results)} {ok}\n".encode())
        return len(results)

    tideq.Queue(PARENTS, url=url).run_tasks({"collect": collect}, lease=5.0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=10_000)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    n = args.children
    work = Path(tempfile.mkdtemp(prefix="tideq-flowkills-"))
    redis = Redis(work)
    procs: dict[str, subprocess.Popen] = {}
    ledgers: dict[str, Path] = {}

    def start(name: str) -> None:
        ledger = work / f"{name}.ledger"
        ledgers[name] = ledger
        if name.startswith("node"):
            cmd = ["node", str(HERE / "flow_worker.mjs"), redis.url, PARTS, str(ledger)]
        else:
            role = "parent" if name == "parent" else "parts"
            cmd = [PY, str(Path(__file__)), f"--{role}-worker", redis.url, str(ledger)]
        procs[name] = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)

    ok = True
    try:
        parents = tideq.Queue(PARENTS, url=redis.url)
        parts = tideq.Queue(PARTS, url=redis.url, shards=4)
        started = time.monotonic()
        chord = tideq.chord([tideq.FlowJob(task="part", data=i, queue=parts) for i in range(n)],
                            tideq.FlowJob(task="collect", id="parent"))
        parents.enqueue_flow(chord)
        enqueued = time.monotonic() - started
        killable = ["py-1", "py-2", "node-1", "node-2"]
        for name in killable + ["parent"]:
            start(name)
        kills = 0
        deadline = time.monotonic() + args.timeout
        parent_ledger = ledgers["parent"]
        while time.monotonic() < deadline:
            if parent_ledger.exists() and parent_ledger.read_text():
                break
            time.sleep(1.0)
            victim = random.choice(killable)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            kills += 1
            start(victim)
        took = time.monotonic() - started
        # Time for a second run of the parent to show, were there one.
        time.sleep(3.0)
        runs = [line.split() for line in parent_ledger.read_text().splitlines()] if parent_ledger.exists() else []
        done: dict[str, int] = {}
        for name in killable:
            for line in ledgers[name].read_text().splitlines():
                done[line.split()[1]] = done.get(line.split()[1], 0) + 1
        info = parents.get("parent")
        print(f"flow of {n} children on 4 shards: enqueued in {enqueued * 1000:.0f} ms; "
              f"{kills} worker SIGKILLs (one a second); parent ran {len(runs)} time(s) after "
              f"{took:.1f} s; children run twice: {sum(1 for c in done.values() if c > 1)}")
        checks = {
            "the parent ran exactly once": len(runs) == 1,
            f"it saw all {n} results, in order": bool(runs) and runs[0][2] == str(n) and runs[0][3] == "True",
            "it completed": info is not None and info.state == "completed",
            f"all {n} children ran": len(done) == n,
            "the workers were killed while children ran": kills >= 1,
        }
        for what, passed in checks.items():
            print(f"  {'ok  ' if passed else 'FAIL'} {what}")
            ok &= passed
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
        redis.kill()
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--parts-worker":
        parts_worker(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--parent-worker":
        parent_worker(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
