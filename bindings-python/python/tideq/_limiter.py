"""Shared limiters: ``Limiter`` (blocking) and ``AsyncLimiter`` (asyncio) define concurrency,
window and token-bucket limits by name, shared by every queue, worker and process of a key
prefix, and take from them inside job handlers. Over its limit, ``acquire`` raises ``OverLimit``,
a ``Snooze``: a handler that lets it propagate runs its job again when the limiter may have room,
without using an attempt."""

from __future__ import annotations

import datetime
from types import TracebackType
from typing import Any, Awaitable, Callable, Generator, Optional, Type, TypeVar, Union

from tideq._outcomes import Snooze
from tideq._tideq import Client, _Limiter, _LimitSlot

_Seconds = Union[float, datetime.timedelta]
T = TypeVar("T")


class OverLimit(Snooze):
    """Raised by ``acquire`` when the limiter ``name`` is over its limit: nothing may be taken
    for ``delay`` seconds (a concurrency limiter: at most about 0.4 s, as holders may give their
    slots back at any time). A ``Snooze``: raised out of a job handler, the job runs again after
    ``delay`` without using an attempt."""

    name: str
    """The limiter's name."""

    def __init__(self, name: str, delay: float) -> None:
        super().__init__(delay)
        self.name = name
        self.args = (f"limiter {name!r} is over its limit; retry after {self.delay} s",)

    def __repr__(self) -> str:
        return f"OverLimit({self.name!r}, {self.delay})"


def _slot_or_raise(name: str, got: Any) -> _LimitSlot:
    if isinstance(got, float):
        raise OverLimit(name, got)
    assert isinstance(got, _LimitSlot)
    return got


class LimitSlot:
    """What ``Limiter.acquire`` took. A context manager: leaving the ``with`` block releases it.
    A concurrency limiter's slot is given back by ``release()`` or when its lease runs out; a
    window's start and a bucket's tokens are spent (``release()`` does nothing)."""

    def __init__(self, native: _LimitSlot) -> None:
        self._native = native

    @property
    def lease_deadline(self) -> Optional[float]:
        """When a concurrency limiter's slot is given back unless released or extended (Unix
        seconds, by the Redis clock); ``None`` for a window or bucket."""
        return self._native.lease_deadline

    def release(self) -> bool:
        """Gives a concurrency limiter's slot back: True when it was still held (False: its lease
        had run out)."""
        return bool(self._native.release(False))

    def extend(self, lease: _Seconds) -> bool:
        """Holds a concurrency limiter's slot for ``lease`` seconds from now: False when it was
        no longer held."""
        return bool(self._native.extend(lease, False))

    def __enter__(self) -> LimitSlot:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.release()


class AsyncLimitSlot:
    """What ``AsyncLimiter.acquire`` took: ``LimitSlot``'s asyncio form."""

    def __init__(self, native: _LimitSlot) -> None:
        self._native = native

    @property
    def lease_deadline(self) -> Optional[float]:
        """When a concurrency limiter's slot is given back unless released or extended (Unix
        seconds, by the Redis clock); ``None`` for a window or bucket."""
        return self._native.lease_deadline

    async def release(self) -> bool:
        """Gives a concurrency limiter's slot back: True when it was still held."""
        return bool(await self._native.release(True))

    async def extend(self, lease: _Seconds) -> bool:
        """Holds a concurrency limiter's slot for ``lease`` seconds from now: False when it was
        no longer held."""
        return bool(await self._native.extend(lease, True))


class _AsyncAcquire:
    """``AsyncLimiter.acquire``'s answer: awaited, the slot; in ``async with``, the slot,
    released on leaving the block."""

    def __init__(self, limiter: _Limiter, name: str, cost: int) -> None:
        self._limiter, self._name, self._cost = limiter, name, cost
        self._slot: Optional[AsyncLimitSlot] = None

    async def _take(self) -> AsyncLimitSlot:
        got = await self._limiter.acquire(self._name, self._cost, True)
        return AsyncLimitSlot(_slot_or_raise(self._name, got))

    def __await__(self) -> Generator[Any, None, AsyncLimitSlot]:
        return self._take().__await__()

    async def __aenter__(self) -> AsyncLimitSlot:
        self._slot = await self._take()
        return self._slot

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._slot is not None:
            await self._slot.release()


class Limiter:
    """The shared limiters of ``client``'s key prefix (blocking; ``AsyncLimiter`` in asyncio
    code). Define a limiter once (each definition is idempotent), then take from it by name.

    Every operation is one atomic script on the limiter's own keys (one Redis Cluster slot), by
    the Redis clock."""

    def __init__(self, client: Client) -> None:
        self._native = _Limiter(client)

    def concurrent(self, name: str, n: int, lease: _Seconds = 60.0) -> None:
        """Defines ``name`` as a concurrency limit: at most ``n`` holders at once (1 to 100,000),
        each holding its slot until it releases it or for ``lease`` seconds at most (up to 7
        days), so a holder that died gives its slot back. Redefining keeps the holders."""
        self._native.concurrent(name, n, lease, False)

    def window(self, name: str, n: int, per: _Seconds) -> None:
        """Defines ``name`` as a window limit: at most ``n`` acquisitions (1 to 100,000) in any
        span of ``per`` seconds (a sliding window, up to 7 days)."""
        self._native.window(name, n, per, False)

    def bucket(self, name: str, capacity: int, refill: float) -> None:
        """Defines ``name`` as a token bucket: ``capacity`` tokens, refilled at ``refill`` tokens
        a second (more than 0); an acquisition takes its ``cost`` in tokens, so a full bucket
        allows a burst of ``capacity``, then ``refill`` a second. A new bucket starts full."""
        self._native.bucket(name, capacity, float(refill), False)

    def acquire(self, name: str, cost: int = 1) -> LimitSlot:
        """Takes from ``name`` (a bucket: ``cost`` tokens; the other kinds take a cost of 1).
        Raises ``OverLimit`` (a ``Snooze``) when it is over its limit, ``InvalidArgumentError``
        for a limiter never defined. Use it in a ``with`` block to release it at the end."""
        return LimitSlot(_slot_or_raise(name, self._native.acquire(name, cost, False)))

    def run(self, name: str, fn: Callable[[], T], cost: int = 1) -> T:
        """Calls ``fn()`` holding a slot of ``name``, released after it."""
        with self.acquire(name, cost):
            return fn()


class AsyncLimiter:
    """``Limiter`` in asyncio code: the same limiters, each method a coroutine, and ``acquire``
    usable as ``async with limiter.acquire("stripe"):`` or awaited."""

    def __init__(self, client: Client) -> None:
        self._native = _Limiter(client)

    async def concurrent(self, name: str, n: int, lease: _Seconds = 60.0) -> None:
        """See ``Limiter.concurrent``."""
        await self._native.concurrent(name, n, lease, True)

    async def window(self, name: str, n: int, per: _Seconds) -> None:
        """See ``Limiter.window``."""
        await self._native.window(name, n, per, True)

    async def bucket(self, name: str, capacity: int, refill: float) -> None:
        """See ``Limiter.bucket``."""
        await self._native.bucket(name, capacity, float(refill), True)

    def acquire(self, name: str, cost: int = 1) -> _AsyncAcquire:
        """See ``Limiter.acquire``: ``async with limiter.acquire(name):`` releases at the end of
        the block; ``await limiter.acquire(name)`` gives the ``AsyncLimitSlot``."""
        return _AsyncAcquire(self._native, name, cost)

    async def run(self, name: str, fn: Callable[[], Awaitable[T]], cost: int = 1) -> T:
        """Awaits ``fn()`` holding a slot of ``name``, released after it."""
        async with self.acquire(name, cost):
            return await fn()
