"""Job-queue throughput of the Python binding, against the Redis at URL.

Usage: python bench/jobs_bench.py URL N
Prints one JSON line of jobs per second (payload: a ~50-byte JSON object, queue defaults):
  enqueue_seq   N/10 sequential enqueue() calls (blocking API)
  enqueue_many  N jobs with enqueue_many, in chunks of 10 000
  work_c1       N no-op jobs enqueued first, then Queue.run(concurrency=1, stop_when_drained=True);
  work_c10      jobs/s from the first handler call until run() returns (every ack done).
  work_c100     Handlers are plain functions (worker threads, GIL held only for the call).
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import tideq

PAYLOAD = b'{"user_id":123456,"task":"send_welcome_email","n":1}'
CHUNK = 10_000


def queue(client: tideq.Client) -> tideq.Queue:
    # keep_for: the completed jobs a run keeps for get() expire by themselves.
    return tideq.Queue(f"bench-{uuid.uuid4().hex}", client, keep_for=300.0)


def rate(n: int, seconds: float) -> int:
    return int(n / seconds) if seconds > 0 else 0


def fill(q: tideq.Queue, n: int) -> None:
    for start in range(0, n, CHUNK):
        q.enqueue_many([PAYLOAD] * min(CHUNK, n - start))


def bench_enqueue_seq(q: tideq.Queue, n: int) -> int:
    t0 = time.perf_counter()
    for _ in range(n):
        q.enqueue(PAYLOAD)
    return rate(n, time.perf_counter() - t0)


def bench_enqueue_many(q: tideq.Queue, n: int) -> int:
    t0 = time.perf_counter()
    fill(q, n)
    return rate(n, time.perf_counter() - t0)


def bench_work(q: tideq.Queue, n: int, concurrency: int) -> int:
    """Drains `q`, which holds exactly `n` ready jobs."""
    first: list[float] = []

    def noop(job: tideq.Job) -> None:
        if not first:
            first.append(time.perf_counter())

    stats = q.run(noop, concurrency=concurrency, poll_interval=0.1, stop_when_drained=True)
    elapsed = time.perf_counter() - first[0]
    assert stats.completed == n, (stats, n)
    return rate(n, elapsed)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    url, n = sys.argv[1], int(sys.argv[2])
    client = tideq.Client(url)
    # The queues the enqueue runs fill are then drained by the work runs: nothing is left behind.
    seq_q, many_q, last_q = queue(client), queue(client), queue(client)
    result: dict[str, object] = {"runtime": "python"}
    result["enqueue_seq"] = bench_enqueue_seq(seq_q, max(1, n // 10))
    result["enqueue_many"] = bench_enqueue_many(many_q, n)
    result["work_c1"] = bench_work(many_q, n, 1)
    fill(seq_q, n - max(1, n // 10))
    result["work_c10"] = bench_work(seq_q, n, 10)
    fill(last_q, n)
    result["work_c100"] = bench_work(last_q, n, 100)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
