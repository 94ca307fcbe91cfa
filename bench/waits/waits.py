"""`make bench-waits`, Python side: N concurrent waits (asyncio) on queue NAME at URL for jobs
w0..w<N-1>, whose handlers return the µs they finished at. Prints "ready", then one JSON line:
how many waits were answered, p50/p99/max ms from a job's finish to its wait's return, and the
longest of 20 waits with a 50 ms timeout."""

import asyncio
import json
import sys
import time

import tideq

url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


async def main() -> None:
    q = tideq.AsyncQueue(name, url=url)
    idle = tideq.AsyncQueue(name + "-idle", q.client)
    lat: list[float] = []

    async def one(i: int) -> None:
        done = await q.wait(f"w{i}", timeout=120)
        lat.append((time.time_ns() // 1000 - int(done)) / 1000)

    waits = [asyncio.ensure_future(one(i)) for i in range(n)]
    print("ready", flush=True)
    await asyncio.gather(*waits)
    lat.sort()
    longest = 0.0
    for _ in range(20):
        t = time.perf_counter()
        try:
            await idle.wait("never", timeout=0.05)
        except tideq.TimeoutError:
            pass
        longest = max(longest, (time.perf_counter() - t) * 1000)
    pick = lambda p: lat[round((len(lat) - 1) * p)]  # noqa: E731
    print(json.dumps({"ok": len(lat), "p50": pick(0.5), "p99": pick(0.99), "max": lat[-1], "timeout_50ms": longest}), flush=True)


asyncio.run(main())
