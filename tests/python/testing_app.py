"""A tiny application as users write one, for tests/python/test_testing.py: its queue is made at
import time with a URL (a closed port unless TIDEQ_APP_URL says otherwise), its tasks are
registered with ``@queue.task``, and ``signup`` enqueues. The test modes switch without changing
a line of it."""

from __future__ import annotations

import os

import tideq

queue = tideq.Queue(
    "testing-app-signups",
    url=os.environ.get("TIDEQ_APP_URL", "redis://127.0.0.1:1"),
    backoff=tideq.Backoff.fixed(0.01),
)
mail = tideq.Queue("testing-app-mail", url=os.environ.get("TIDEQ_APP_URL", "redis://127.0.0.1:1"))
sent: list[str] = []


@mail.task
def send_welcome(to: str) -> str:
    sent.append(to)
    return f"welcomed {to}"


@queue.task(max_attempts=3)
def create_account(email: str) -> dict[str, str]:
    if "@" not in email:
        raise ValueError(f"not an email address: {email!r}")
    send_welcome.enqueue(to=email)
    return {"account": email.split("@")[0]}


def signup(email: str) -> str:
    """What the web app calls: enqueues the account's creation, returns the job id."""
    return create_account.enqueue(email)
