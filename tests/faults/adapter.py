"""Fault-suite adapter, Python side: a producer or a worker the driver starts and kills.

    adapter.py producer URL QUEUE LEDGER PREFIX N SECONDS
    adapter.py worker URL QUEUE LEDGER LEASE_MS CONCURRENCY

The producer enqueues PREFIX-0 .. PREFIX-(N-1) spread over SECONDS (each id retried until Redis takes it, or given
up after 60 s) and appends "acked <id>" to LEDGER once an enqueue returned. The worker appends
"done <id>" for every job its handler runs, then completes it; SIGTERM stops it gracefully.
Ledger lines are written with one unbuffered write each, so a SIGKILL loses none that returned.
"""

import os
import random
import sys
import time

import tideq


def ledger(path: str):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    return lambda line: os.write(fd, (line + "\n").encode())


def producer(url: str, queue: str, path: str, prefix: str, n: int, seconds: float) -> None:
    write = ledger(path)
    q = tideq.Queue(queue, url=url)
    for i in range(n):
        job_id = f"{prefix}-{i}"
        deadline = time.monotonic() + 60
        while True:
            try:
                q.enqueue(job_id.encode(), id=job_id)
                write(f"acked {job_id}")
                break
            except tideq.TideqError:
                if time.monotonic() > deadline:
                    write(f"gave_up {job_id}")
                    break
                time.sleep(0.05)
        time.sleep(random.random() * 2 * seconds / n)


def worker(url: str, queue: str, path: str, lease_ms: int, concurrency: int) -> None:
    write = ledger(path)

    def handle(job: tideq.Job) -> None:
        write(f"done {job.id}")
        time.sleep(random.random() * 0.005)

    q = tideq.Queue(queue, url=url)
    q.run(handle, concurrency=concurrency, lease=lease_ms / 1000, grace=2.0)


if __name__ == "__main__":
    kind, url, queue, path = sys.argv[1:5]
    if kind == "producer":
        producer(url, queue, path, sys.argv[5], int(sys.argv[6]), float(sys.argv[7]))
    else:
        worker(url, queue, path, int(sys.argv[5]), int(sys.argv[6]))
