"""Capped-queue throughput of the Python binding, against the Redis at URL.

Usage: python bench/capped_bench.py URL N
Prints one JSON line of items per second:
  push_seq    N/10 sequential push() calls (blocking API)
  push_async  N/10 push() calls with the asyncio API, asyncio.gather in windows of 256
  push_many   N items of 64 bytes over 1000 groups, push_many in chunks of 10 000
  pop_batch   draining one group of N items with pop_batch(128)
  next_batch  draining N items over 100 groups with next_batch(128)
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid

import tideq

ITEM = b"x" * 64
CHUNK = 10_000
WINDOW = 256


def queue(client: tideq.Client, capacity: int) -> tideq.CappedQueue:
    # ttl: whatever a run leaves behind expires by itself.
    return tideq.CappedQueue(f"bench-{uuid.uuid4().hex}", client, capacity=capacity, ttl=300.0)


def fill(q: tideq.CappedQueue, n: int, groups: int) -> None:
    pairs = [(f"g{i % groups}", ITEM) for i in range(n)]
    for start in range(0, n, CHUNK):
        q.push_many(pairs[start : start + CHUNK])


def rate(n: int, seconds: float) -> int:
    return int(n / seconds) if seconds > 0 else 0


def bench_push_seq(client: tideq.Client, n: int) -> int:
    q = queue(client, 1000)
    t0 = time.perf_counter()
    for i in range(n):
        q.push(f"g{i % 1000}", ITEM)
    return rate(n, time.perf_counter() - t0)


def bench_push_async(client: tideq.Client, n: int) -> int:
    async def main() -> float:
        q = tideq.AsyncCappedQueue(f"bench-{uuid.uuid4().hex}", client, capacity=1000, ttl=300.0)
        t0 = time.perf_counter()
        for start in range(0, n, WINDOW):
            await asyncio.gather(*(q.push(f"g{i % 1000}", ITEM) for i in range(start, min(n, start + WINDOW))))
        return time.perf_counter() - t0

    return rate(n, asyncio.run(main()))


def bench_push_many(client: tideq.Client, n: int) -> int:
    q = queue(client, 1000)
    pairs = [(f"g{i % 1000}", ITEM) for i in range(n)]
    t0 = time.perf_counter()
    for start in range(0, n, CHUNK):
        q.push_many(pairs[start : start + CHUNK])
    return rate(n, time.perf_counter() - t0)


def bench_pop_batch(client: tideq.Client, n: int) -> int:
    q = queue(client, n)
    fill(q, n, 1)
    got = 0
    t0 = time.perf_counter()
    while True:
        items = q.pop_batch("g0", 128)
        if not items:
            break
        got += len(items)
    elapsed = time.perf_counter() - t0
    assert got == n, (got, n)
    return rate(n, elapsed)


def bench_next_batch(client: tideq.Client, n: int) -> int:
    q = queue(client, n)
    fill(q, n, 100)
    got = 0
    t0 = time.perf_counter()
    while True:
        batch = q.next_batch(128)
        if batch is None:
            break
        got += len(batch[1])
    elapsed = time.perf_counter() - t0
    assert got == n, (got, n)
    return rate(n, elapsed)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    url, n = sys.argv[1], int(sys.argv[2])
    client = tideq.Client(url)
    result = {
        "runtime": "python",
        "push_seq": bench_push_seq(client, max(1, n // 10)),
        "push_many": bench_push_many(client, n),
        "pop_batch": bench_pop_batch(client, n),
        "next_batch": bench_next_batch(client, n),
        "push_async": bench_push_async(client, max(1, n // 10)),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
