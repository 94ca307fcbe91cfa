"""tideq quick start: a capped grouped queue (Redis URL from TIDEQ_REDIS_URL)."""
import uuid

import tideq

# Each group keeps its newest 1000 items; a group idle for a day disappears.
q = tideq.CappedQueue(f"events-{uuid.uuid4().hex[:8]}", capacity=1000, ttl=86400.0)

q.push("game:1", b"player joined")                      # -> items dropped (0)
q.push_many([("game:1", b"score 10"), ("game:2", b"player left")])
print(q.len("game:1"), "items in game:1; groups:", sorted(q.groups()))


def handle(group: str, items: list[bytes]) -> None:     # may also be `async def`
    print(f"handled {len(items)} item(s) from {group}: {items}")


# Consume round-robin over groups until the queue is empty (at-most-once delivery).
stats = q.run(handle, batch_size=128, stop_when_empty=True)
print(stats, q.stats())
