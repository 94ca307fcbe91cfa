"""A FastAPI app with tideq: a worker runs the app's tasks while the app runs (stopped gracefully
with it), and tideq's dashboard is mounted under /tideq behind the app's own login.

The "login" is a stand-in: the X-User header (a real app reads its session). alice may act, bob
may only read, anyone else is refused. Run it with

    TIDEQ_REDIS_URL=redis://127.0.0.1:6379 uvicorn examples.fastapi.app:app

and open http://127.0.0.1:8000/tideq/ (with the header, e.g. through a browser extension).
ALLOWED_HOSTS (comma-separated) lists the names the dashboard answers besides localhost.
"""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI

import tideq
import tideq.asgi

URL = os.environ.get("TIDEQ_REDIS_URL", "redis://127.0.0.1:6379")
QUEUE = os.environ.get("EXAMPLE_QUEUE", "signups")

queue = tideq.AsyncQueue(QUEUE, url=URL)


@queue.task
async def welcome(to: str, seconds: float = 0.0) -> str:
    await asyncio.sleep(seconds)
    return f"welcomed {to}"


def authorize(request: tideq.asgi.AuthRequest, action: tideq.asgi.Action) -> bool:
    user = request.headers.get("x-user")
    return user == "alice" or (user == "bob" and action == "read")


app = FastAPI(lifespan=tideq.asgi.lifespan(lambda: [queue.work_tasks(grace=30)]))
app.mount(
    "/tideq",
    tideq.asgi.dashboard(
        URL,
        authorize=authorize,
        allowed_hosts=[h for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h],
    ),
)


@app.post("/signup")
async def signup(to: str, seconds: float = 0.0) -> dict[str, str]:
    return {"id": await welcome.enqueue(to, seconds=seconds)}


@app.get("/signup/{id}")
async def result(id: str) -> dict[str, object]:
    return {"result": await queue.wait(id, timeout=10)}
