"""tideq quick start: a reliable job queue (Redis URL from TIDEQ_REDIS_URL)."""
import uuid

import tideq

# A failing job is retried after its backoff and dead-lettered after 3 attempts.
q = tideq.Queue(f"emails-{uuid.uuid4().hex[:8]}", max_attempts=3, backoff=tideq.Backoff.fixed(0.1))

q.enqueue(b'{"to": "ada@example.com"}', id="welcome-ada")  # an id makes it idempotent
q.enqueue(b'{"to": "bob@example.com"}', delay=0.5)  # due in 0.5 s, by the Redis clock
print(q.get("welcome-ada"))


def send(job: tideq.Job) -> None:  # may also be `async def`; raise to fail the attempt
    print(f"sending to {job.json()['to']} (attempt {job.attempt})")


# Work until nothing is ready, delayed or running. Delivery is at-least-once: make handlers
# idempotent. Without stop_when_drained, run() works until SIGINT/SIGTERM.
stats = q.run(send, concurrency=10, stop_when_drained=True)
print(stats, q.stats())
