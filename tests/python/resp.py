"""A minimal Redis client for tests (RESP2 over a raw socket), so the tests need no redis-py:
the server clock and direct looks at keys, independent of the code under test."""

from __future__ import annotations

import socket
from typing import Any, Union
from urllib.parse import urlparse

Arg = Union[str, bytes, int]


def _encode(args: tuple[Arg, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _read(f: Any) -> Any:
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed by redis")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise ValueError(f"unexpected RESP reply {line!r}")


def command(url: str, *args: Arg) -> Any:
    """Sends one command to the Redis at `url` (redis://[user:password@]host:port) and returns
    its reply (logging in first when the URL holds a password)."""
    u = urlparse(url)
    with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=5) as s:
        with s.makefile("rb") as f:
            if u.password is not None:
                s.sendall(_encode(("AUTH", u.username or "default", u.password)))
                _read(f)
            s.sendall(_encode(args))
            return _read(f)


def server_ms(url: str) -> int:
    """The Redis server clock (TIME), in milliseconds since the epoch, rounded down."""
    secs, micros = command(url, "TIME")
    return int(secs) * 1000 + int(micros) // 1000


def keys(url: str, pattern: str) -> list[bytes]:
    """Every key matching `pattern` (KEYS: tests only)."""
    return sorted(command(url, "KEYS", pattern))
