"""The long variant of `tideq worker`'s kill test (`make workers-long`): SIGKILL of a child every
second for 30 s while 20,000 jobs run under `tideq worker --processes 2`; every job completes, none
runs twice at once (the ledger of starts and ends), and the supervisor ends with as many children
as asked. `--smoke` (`make workers-long SMOKE=1`): 5 s of kills over 2,000 jobs.

Usage: .venv/bin/python tests/python/workers_long.py [--smoke] [--jobs N] [--seconds S]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tideq  # noqa: E402
from tideq_harness import RedisServer  # noqa: E402
from worker_procs import TASKS, Ledger, Supervisor, wait_for  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--seconds", type=int)
    a = ap.parse_args()
    jobs = a.jobs or (2000 if a.smoke else 20000)
    seconds = a.seconds or (5 if a.smoke else 30)
    server = RedisServer()
    folder = Path(tempfile.mkdtemp(prefix="tideq-workers-long-"))
    name = f"workers-long-{uuid.uuid4().hex[:8]}"
    (folder / "tasks.py").write_text(TASKS)
    ledger = Ledger(folder / "ledger")
    q = tideq.Queue(name, url=server.url)
    for i in range(jobs):
        q.enqueue_task("work", {"i": i, "sleep_ms": 20}, id=f"job-{i}")
    env = {"TQ_QUEUE": name, "TIDEQ_REDIS_URL": server.url, "TQ_LEDGER": str(ledger.path)}
    sup = Supervisor(folder, "tasks:queue", "--processes", "2", "--concurrency", "8", env=env)
    try:
        if not wait_for(lambda: ledger.started() > 0 and len(sup.children()) == 2, 60):
            print(f"the workers did not start:\n{sup.stderr()[-3000:]}", file=sys.stderr)
            return 1
        killed: dict[int, float] = {}
        for _ in range(seconds):
            kids = sup.children()
            if kids:
                killed[kids[0]] = time.time()
                os.kill(kids[0], signal.SIGKILL)
            time.sleep(1)
        print(f"killed {len(killed)} children in {seconds} s; "
              f"{q.stats().completed} of {jobs} jobs completed so far", flush=True)
        # The killed children's jobs come back once their leases (30 s) expire.
        if not wait_for(lambda: q.stats().completed >= jobs, 300, interval=0.5):
            print(f"only {q.stats().completed} of {jobs} completed\n{sup.stderr()[-3000:]}",
                  file=sys.stderr)
            return 1
        missing = {str(i) for i in range(jobs)} - ledger.ended()
        assert not missing, f"{len(missing)} jobs never ended, e.g. {sorted(missing)[:5]}"
        ledger.check_never_twice_at_once(killed)
        assert wait_for(lambda: len(sup.children()) == 2, 30), sup.children()
        stats = q.stats()
        assert stats.dead == 0 and stats.ready == 0 and stats.active == 0, stats
        runs = ledger.started()
        sup.signal(signal.SIGTERM)
        code = sup.wait(60)
        assert code == 0, f"exit {code}\n{sup.stderr()[-3000:]}"
        print(f"ok: {jobs} jobs completed, {runs} runs ({runs - jobs} again after a kill), "
              f"none twice at once, {len(ledger.pids())} processes over the run, 2 at the end")
        return 0
    finally:
        sup.stop()
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
