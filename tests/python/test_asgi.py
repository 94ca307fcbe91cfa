"""tideq.asgi: the dashboard mounted in an ASGI app behind the app's own login, and workers run
for the app's lifetime. The FastAPI example (examples/fastapi/app.py) is driven in-process with
Starlette's TestClient and as a real uvicorn server, against the shared redis-server."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import json
import urllib.error
import urllib.request

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.testclient import TestClient

import tideq
import tideq.asgi
from tideq_harness import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fastapi" / "app.py"
BASE = "http://127.0.0.1"  # a loopback Host: answered without allowed_hosts
POST = {"X-Tideq-Request": "1", "Origin": BASE}


def load_example(redis_url: str, queue: str, **env: str) -> ModuleType:
    """The example app, imported fresh with its environment (its queue of the test's own)."""
    os.environ.update({"TIDEQ_REDIS_URL": redis_url, "EXAMPLE_QUEUE": queue, **env})
    try:
        spec = importlib.util.spec_from_file_location(f"example_{uuid.uuid4().hex}", EXAMPLE)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        for k in ("EXAMPLE_QUEUE", "ALLOWED_HOSTS", *env):
            os.environ.pop(k, None)


@pytest.fixture
def example(redis_url: str, name: str) -> Iterator[tuple[ModuleType, TestClient]]:
    module = load_example(redis_url, name)
    with TestClient(module.app, base_url=BASE) as http:  # runs the lifespan
        yield module, http


def test_the_app_login_decides_who_reads_and_who_acts(
    example: tuple[ModuleType, TestClient], client: tideq.Client, name: str
) -> None:
    _, http = example
    tideq.Queue(name, client).enqueue(b"x")
    for path in ("/tideq/", "/tideq/app.js", "/tideq/api/overview"):
        r = http.get(path)
        assert r.status_code == 403, path
        assert "authorize hook" in r.json()["error"]
    overview = http.get("/tideq/api/overview", headers={"X-User": "bob"}).json()
    assert overview["read_only"] is True
    assert name in [q["name"] for q in overview["queues"]]
    pause = f"/tideq/api/queues/{name}/pause"
    assert http.post(pause, headers={"X-User": "bob", **POST}).status_code == 403
    assert not tideq.Queue(name, client).stats().paused
    assert http.get("/tideq/api/overview", headers={"X-User": "alice"}).json()["read_only"] is False
    r = http.post(pause, headers={"X-User": "alice", **POST})
    assert r.status_code == 200, r.text
    assert tideq.Queue(name, client).stats().paused


def test_a_mounted_dashboard_refuses_a_foreign_host_and_cross_site_changes(
    example: tuple[ModuleType, TestClient], client: tideq.Client, name: str
) -> None:
    _, http = example
    tideq.Queue(name, client).enqueue(b"x")
    r = http.get("/tideq/api/overview", headers={"X-User": "alice", "Host": "attacker.example"})
    assert r.status_code == 403 and "allowed_hosts" in r.json()["error"]
    pause = f"/tideq/api/queues/{name}/pause"
    r = http.post(pause, headers={"X-User": "alice"})
    assert r.status_code == 403 and "X-Tideq-Request" in r.json()["error"]
    r = http.post(pause, headers={"X-User": "alice", **POST, "Origin": "http://attacker.example"})
    assert r.status_code == 403 and "cross-origin" in r.json()["error"]
    assert not tideq.Queue(name, client).stats().paused
    page = http.get("/tideq/", headers={"X-User": "bob"})
    assert page.headers["x-frame-options"] == "DENY"


def test_allowed_hosts_lets_the_app_names_through(redis_url: str, name: str) -> None:
    module = load_example(redis_url, name, ALLOWED_HOSTS="queues.example.com")
    with TestClient(module.app, base_url="http://queues.example.com") as http:
        assert http.get("/tideq/api/overview", headers={"X-User": "bob"}).status_code == 200
        r = http.get("/tideq/api/overview", headers={"X-User": "bob", "Host": "other.example"})
        assert r.status_code == 403


def test_the_mounted_page_links_and_api_calls_carry_the_prefix(
    example: tuple[ModuleType, TestClient],
) -> None:
    _, http = example
    r = http.get("/tideq?x=1", headers={"X-User": "bob"}, follow_redirects=False)
    assert r.status_code in (307, 308)
    assert r.headers["location"].endswith("/tideq/?x=1")
    page = http.get("/tideq/", headers={"X-User": "bob"})
    assert page.status_code == 200
    refs = [part.split('"')[0] for attr in ('href="', 'src="') for part in page.text.split(attr)[1:]]
    assert refs
    for ref in refs:
        if ref.startswith(("#", "data:")):
            continue
        assert not ref.startswith("/"), ref
        assert http.get(f"/tideq/{ref}", headers={"X-User": "bob"}).status_code == 200, ref


def test_the_lifespan_runs_the_worker_while_the_app_runs(redis_url: str, name: str) -> None:
    module = load_example(redis_url, name)
    with TestClient(module.app, base_url=BASE) as http:
        job = http.post("/signup", params={"to": "ada@example.com"}).json()
        assert http.get(f"/signup/{job['id']}").json() == {"result": "welcomed ada@example.com"}
    # The app stopped: so did its worker, and a job enqueued now waits.
    q = tideq.Queue(name, tideq.Client(redis_url))
    q.enqueue_task("welcome", {"to": "late@example.com"})
    assert q.stats().ready == 1


def test_an_async_hook_reads_what_the_app_middleware_put_in_the_scope(
    redis_url: str, name: str
) -> None:
    seen: list[tuple[str, str, Any]] = []

    class Login:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                scope["user"] = dict(scope["headers"]).get(b"x-user", b"").decode()
            await self.app(scope, receive, send)

    async def authorize(request: tideq.asgi.AuthRequest, action: tideq.asgi.Action) -> bool:
        seen.append((request.method, action, request.client))
        return bool(request.scope.get("user")) and action == "read"

    dash = tideq.asgi.dashboard(redis_url, authorize=authorize, queues=[name])
    app = Starlette(routes=[Mount("/admin/tideq", app=dash)], middleware=[Middleware(Login)])
    with TestClient(app, base_url=BASE) as http:
        assert http.get("/admin/tideq/api/overview").status_code == 403
        o = http.get("/admin/tideq/api/overview", headers={"X-User": "eve"}).json()
        assert o["read_only"] is True
        assert [q["name"] for q in o["queues"]] == [name]
        r = http.post(f"/admin/tideq/api/queues/{name}/pause", headers={"X-User": "eve", **POST})
        assert r.status_code == 403
    # The overview asked both (whether to show actions); nothing else asked "act" but the POST.
    assert [a for _, a, _ in seen] == ["read", "read", "act", "act"]
    assert seen[0][2] is not None  # the client's address


def test_bad_dashboard_options_are_refused(redis_url: str) -> None:
    with pytest.raises(tideq.InvalidArgumentError, match="allowed_hosts"):
        tideq.asgi.dashboard(redis_url, authorize=lambda r, a: True, allowed_hosts=["http://x"])
    with pytest.raises(tideq.InvalidArgumentError, match="refresh"):
        tideq.asgi.dashboard(redis_url, authorize=lambda r, a: True, refresh=0)
    with pytest.raises(TypeError, match="authorize"):
        tideq.asgi.dashboard(redis_url, authorize=None)  # type: ignore[arg-type]


def test_workers_stop_gracefully_when_the_context_ends(client: tideq.Client, name: str) -> None:
    import asyncio

    q = tideq.AsyncQueue(name, client)
    ran: list[str] = []

    async def slow(job: tideq.Job) -> None:
        await asyncio.sleep(0.3)
        ran.append(job.id)

    async def main() -> None:
        async with tideq.asgi.workers(lambda: q.work(slow, grace=10)) as running:
            assert len(running) == 1
            await q.enqueue(b"x", id="slow-1")
            while (await q.stats()).active == 0:
                await asyncio.sleep(0.01)
        assert not running[0].running

    asyncio.run(main())
    assert ran == ["slow-1"], "the running job finished before the app stopped"


def test_the_example_under_uvicorn_lets_its_running_job_finish_on_ctrl_c(
    redis_url: str, name: str
) -> None:
    port = free_port()
    env = {**os.environ, "TIDEQ_REDIS_URL": redis_url, "EXAMPLE_QUEUE": name}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "examples.fastapi.app:app", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            req = urllib.request.Request(f"{base}/tideq/", headers={"X-User": "bob"})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, ConnectionError):
                return False

        assert wait_for(up, timeout=30)
        signup = urllib.request.Request(f"{base}/signup?to=ada@example.com&seconds=1", method="POST")
        with urllib.request.urlopen(signup, timeout=10) as r:
            job = json.loads(r.read())
        q = tideq.Queue(name, tideq.Client(redis_url))
        assert wait_for(lambda: q.stats().active == 1)
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0, server.stderr.read() if server.stderr else ""
        info = q.get(job["id"])
        assert info is not None and info.state == "completed"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_failing_hook_fails_the_request_and_lets_nothing_through(
    redis_url: str, client: tideq.Client, name: str
) -> None:
    def authorize(request: tideq.asgi.AuthRequest, action: tideq.asgi.Action) -> bool:
        raise LookupError("the session store is down")

    tideq.Queue(name, client).enqueue(b"x")
    dash = tideq.asgi.dashboard(redis_url, authorize=authorize)
    app = Starlette(routes=[Mount("/tideq", app=dash)])
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as http:
        r = http.post(f"/tideq/api/queues/{name}/pause", headers=POST)
        assert r.status_code == 500
    with TestClient(app, base_url=BASE) as http, pytest.raises(LookupError):
        http.get("/tideq/api/overview")
    assert not tideq.Queue(name, client).stats().paused
