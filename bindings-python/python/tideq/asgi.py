"""tideq in an ASGI app (FastAPI, Starlette, any ASGI framework).

``dashboard(...)`` is tideq's web dashboard as an ASGI app to mount under a prefix
(``app.mount("/tideq", tideq.asgi.dashboard(authorize=...))``), behind the app's own login: its
``authorize(request, action)`` hook decides every request. The dashboard itself (its page, API,
Host and cross-site guards) is the same code as ``tideq dashboard``, called in-process.

``workers(start)`` is an async context manager that starts tideq workers when entered and stops
them gracefully when left (inside a FastAPI/Starlette ``lifespan``); ``lifespan(start)`` is a
ready ``lifespan=`` for the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping, Sequence
from typing import Any, Callable, Literal, Optional, Union

from ._tideq import AsyncWorker, Client, Worker, _Dashboard

__all__ = ["AuthRequest", "Action", "dashboard", "lifespan", "workers"]

Action = Literal["read", "act"]
"""What a request asks: ``"read"`` (the page, the queues, their jobs) or ``"act"`` (requeue,
retry, cancel, delete, purge, pause, resume)."""

# The dashboard's requests carry no body; a bigger one is refused before it is read whole.
_MAX_BODY = 64 * 1024


class AuthRequest:
    """What ``authorize`` is given about a request to the dashboard.

    ``method``, ``path`` (as the browser asked it, with the mount prefix), ``headers`` (names in
    lowercase), ``client`` (``(host, port)`` or None) and ``scope``: the ASGI scope, where the
    app's middlewares left their state (Starlette's ``scope["session"]``, ``scope["user"]``;
    ``starlette.requests.Request(req.scope)`` wraps it)."""

    __slots__ = ("method", "path", "headers", "client", "scope")

    def __init__(self, scope: Mapping[str, Any], headers: dict[str, str]) -> None:
        self.method: str = scope.get("method", "GET")
        self.path: str = scope.get("path", "/")
        self.headers: dict[str, str] = headers
        client = scope.get("client")
        self.client: Optional[tuple[str, int]] = (client[0], client[1]) if client else None
        self.scope: Mapping[str, Any] = scope

    def __repr__(self) -> str:
        return f"AuthRequest({self.method} {self.path})"


Authorize = Callable[[AuthRequest, Action], Union[bool, Awaitable[bool]]]


class _DashboardApp:
    """The mounted dashboard (an ASGI app)."""

    def __init__(self, native: _Dashboard, authorize: Authorize) -> None:
        self._native = native
        self._authorize = authorize

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # served on its own: nothing to start
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == "websocket":  # the dashboard has none
            await send({"type": "websocket.close", "code": 1000})
            return
        if scope["type"] != "http":
            raise RuntimeError(f"the tideq dashboard answers HTTP only, not {scope['type']}")
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > _MAX_BODY:
                await _send(send, 413, [("content-type", "text/plain")], b"request too large")
                return
            if not message.get("more_body"):
                break
        # The ASGI spec's path includes root_path (the mount prefix); older Starlette removed it.
        root = scope.get("root_path", "")
        path = scope["path"]
        under = path[len(root) :] if root and path.startswith(root) else path
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        query = scope.get("query_string", b"").decode("latin-1") or None
        request: Optional[AuthRequest] = None
        granted: list[tuple[str, bool]] = []
        while True:
            ask, status, out, data = await self._native.handle(
                scope["method"], root, under, query, headers, body, granted
            )
            if ask is None:
                break
            if request is None:
                request = AuthRequest(scope, {k.lower(): v for k, v in headers})
            ok = self._authorize(request, "act" if ask == "act" else "read")
            if inspect.isawaitable(ok):
                ok = await ok
            granted.append((ask, bool(ok)))
        await _send(send, status, out, data)


async def _send(send: Any, status: int, headers: Sequence[tuple[str, str]], body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def dashboard(
    url: Optional[str] = None,
    *,
    authorize: Authorize,
    client: Optional[Client] = None,
    queues: Optional[Sequence[str]] = None,
    shards: Optional[int] = None,
    refresh: Optional[float] = None,
    read_only: bool = False,
    allowed_hosts: Optional[Sequence[str]] = None,
) -> Callable[[Any, Any, Any], Awaitable[None]]:
    """tideq's dashboard as an ASGI app: ``app.mount("/tideq", dashboard(authorize=...))``.

    ``authorize(request, action)`` (a plain or ``async`` function) decides every request: the
    page and its API need ``"read"``, changes ``"act"``; False answers 403. It gets an
    ``AuthRequest``. Redis: ``url`` or ``client`` (neither: ``TIDEQ_REDIS_URL``, else
    ``redis://127.0.0.1:6379``). ``queues``: only these job queues (default: every queue under
    the client's prefix); ``shards``: their shard count; ``refresh``: seconds between reads
    (default 10, as ``tideq dashboard``). ``read_only`` refuses every change.

    ``allowed_hosts``: the ``Host`` names answered besides loopback ones, without scheme or port
    (``["queues.example.com"]``), or ``["*"]`` when the app or its proxy checks ``Host`` itself.
    The default answers loopback names only, against DNS rebinding. Changes need the header
    ``X-Tideq-Request: 1`` (the page sends it) and, with an ``Origin``, one matching ``Host``.
    Bad options raise ``InvalidArgumentError``."""
    if not callable(authorize):
        raise TypeError("authorize must be a function (request, action) -> bool")
    native = _Dashboard(
        url,
        client=client,
        queues=list(queues) if queues is not None else None,
        shards=shards,
        refresh=refresh,
        read_only=read_only,
        allowed_hosts=list(allowed_hosts) if allowed_hosts is not None else None,
    )
    return _DashboardApp(native, authorize)


_Started = Union[AsyncWorker, Worker, Iterable[Union[AsyncWorker, Worker]], None]


@contextlib.asynccontextmanager
async def workers(
    start: Callable[[], Union[_Started, Awaitable[_Started]]],
) -> AsyncIterator[list[Union[AsyncWorker, Worker]]]:
    """Starts tideq workers on entering (``start()`` returns a worker, a list of them, or an
    awaitable of either: ``lambda: [queue.work_tasks()]``) and stops them on leaving: every
    worker stops taking jobs at once, then each waits for its running handlers (its ``grace``
    period), so an app's shutdown lets jobs in progress finish. Use it inside a ``lifespan``:

    ``async with tideq.asgi.workers(lambda: [queue.work_tasks()]): yield``"""
    started = start()
    if inspect.isawaitable(started):
        started = await started
    if started is None:
        running: list[Union[AsyncWorker, Worker]] = []
    elif isinstance(started, (AsyncWorker, Worker)):
        running = [started]
    else:
        running = list(started)
    try:
        yield running
    finally:
        for w in running:
            w.stop()
        for w in running:
            if isinstance(w, AsyncWorker):
                await w.join()
            else:
                await asyncio.to_thread(w.join)


def lifespan(
    start: Callable[[], Union[_Started, Awaitable[_Started]]],
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """A ``lifespan=`` for FastAPI or Starlette running ``workers(start)`` while the app runs:
    ``FastAPI(lifespan=tideq.asgi.lifespan(lambda: [queue.work_tasks()]))``."""

    @contextlib.asynccontextmanager
    async def run(app: Any) -> AsyncIterator[None]:
        async with workers(start):
            yield

    return run
