"""Test modes: test the code that enqueues without a Redis, with no change to it.

``fake()`` records every job enqueued in this process (``Queue`` and ``AsyncQueue``, however they
were made) instead of sending it: ``assert_enqueued``, ``enqueued`` and ``jobs`` look at them,
``drain()`` runs them (and what their handlers enqueue) with the functions registered by
``@queue.task``. ``inline()`` runs each job at once, in the enqueue. Both check and encode every
enqueue as against Redis (bad input still raises, and nothing is recorded), run a job through the
worker's own code (retries at once up to ``max_attempts``, then dead with the error a worker
records; ``Snooze``/``BackOff`` run it again at once; ``DontRetry`` kills it at once), and answer
``get`` and ``wait`` from the record; every other queue operation raises ``NotSupportedError``,
and no connection is made.

    with tideq.testing.fake() as fake:
        signup("ada@example.com")            # your code, which enqueues
        fake.assert_enqueued(task="send_welcome", args={"to": "ada@example.com"})
        fake.drain()                         # runs it with the @queue.task function

The pytest plugin (installed with the package) adds the fixtures ``tideq_fake``, ``tideq_inline``,
``tideq_redis`` (a private ``redis-server`` for the session) and ``tideq_queue`` (a ``Queue`` on it
with a name of the test's own).
"""

from __future__ import annotations

import dataclasses
import datetime
import types
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

from tideq import _tasks, _tideq

__all__ = ["DrainReport", "RecordedJob", "TestMode", "fake", "inline"]

# What ``drain(handlers=...)`` and ``inline(handlers=...)`` take: per queue name, its tasks by name
# (functions called with the job's arguments, as ``work_tasks`` takes them), or one
# ``handler(job)`` for all its jobs (as ``work`` takes it).
Handlers = Mapping[str, Union[Mapping[str, Callable[..., Any]], Callable[[Any], Any]]]

_MISSING: Any = object()


@dataclasses.dataclass(frozen=True)
class RecordedJob:
    """A job as a test mode recorded it."""

    id: str
    queue: str
    #: The task's name (None for a job enqueued with a raw payload).
    task: Optional[str]
    #: The task's arguments, decoded (None for a raw payload).
    args: Any
    #: The payload as enqueued (a task's encoded arguments).
    payload: bytes
    #: The delay asked for, in seconds (None: none).
    delay: Optional[float]
    priority: Optional[int]
    group: Optional[str]
    max_attempts: int
    #: ``"enqueued"`` (not run yet), ``"completed"`` or ``"dead"``.
    state: str
    #: Attempts made (snoozes not counted).
    attempts: int
    #: What the handler returned, decoded as ``Queue.get(id).result`` is.
    result: Any
    #: The last progress the handler reported (``job.progress``), decoded like ``result``.
    progress: Any
    #: The last failed attempt's error (``"ExcType: message"``), kept after a later success.
    error: Optional[str]
    #: Every failed attempt's error, in order.
    errors: list[str]
    #: The lines its handlers logged (``job.log``), oldest first.
    logs: list[str]


@dataclasses.dataclass(frozen=True)
class DrainReport:
    """What a ``drain`` ran."""

    #: Attempts made (snoozes not counted).
    ran: int
    completed: int
    dead: int
    #: Jobs left recorded, not run: no handler for their queue, or they kept snoozing.
    left: int


def _resolve(handlers: Optional[Handlers]) -> list[tuple[str, Optional[str], Callable[..., Any]]]:
    """(queue, task name or None, handler(job)) for the native side: the ``@queue.task``
    registry, with ``handlers`` over it (a queue's mapping adds to or replaces its tasks by name;
    a queue's callable replaces them all)."""
    merged: dict[str, Any] = dict(_tasks.registry())
    for queue, h in (handlers or {}).items():
        if isinstance(h, Mapping):
            base = merged.get(queue)
            merged[queue] = {**(base if isinstance(base, Mapping) else {}), **h}
        elif callable(h):
            merged[queue] = h
        else:
            raise TypeError(
                f"handlers[{queue!r}] must be a mapping of task names to functions or a "
                f"handler(job), not {type(h).__name__}"
            )
    out: list[tuple[str, Optional[str], Callable[..., Any]]] = []
    for queue, h in merged.items():
        if isinstance(h, Mapping):
            out.extend((queue, name, fn) for name, fn in _tasks.handlers(h))
        else:
            out.append((queue, None, h))
    return out


def _name(value: Any) -> Any:
    """A ``Queue`` or ``Task`` given as a filter, by its name."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else value


def _filter(task: Any, args: Any, queue: Any, delay: Any, group: Optional[str],
            id: Optional[str], priority: Optional[int]) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if task is not None:
        f["task"] = _name(task)
    if args is not _MISSING:
        f["args"] = args
    if queue is not None:
        f["queue"] = _name(queue)
    if delay is not None:
        secs = delay.total_seconds() if isinstance(delay, datetime.timedelta) else float(delay)
        f["delay_ms"] = round(secs * 1000)
    if group is not None:
        f["group"] = group
    if id is not None:
        f["id"] = id
    if priority is not None:
        f["priority"] = priority
    return f


class TestMode:
    """A test mode that is on until ``stop()`` (or the end of its ``with`` block). Filters
    (``task``, ``args``, ``queue``, ``delay``, ``group``, ``id``, ``priority``) match every field
    given: ``task`` and ``queue`` take names or the ``Task`` and ``Queue`` objects, ``args`` the
    arguments as enqueued (a ``Task``'s keyword arguments as a dict), ``delay`` seconds or a
    ``timedelta``."""

    __test__ = False  # not a test class, for pytest

    def __init__(self, native: Any, handlers: Optional[Handlers] = None) -> None:
        self._native = native
        self._handlers = handlers

    @property
    def mode(self) -> str:
        """``"fake"`` or ``"inline"``."""
        return str(self._native.mode)

    def stop(self) -> None:
        """Turn the mode off: queues use Redis again. The record stays readable."""
        self._native.stop()

    def __enter__(self) -> TestMode:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[types.TracebackType]) -> None:
        self.stop()

    def jobs(self, *, task: Any = None, args: Any = _MISSING, queue: Any = None,
             delay: Any = None, group: Optional[str] = None, id: Optional[str] = None,
             priority: Optional[int] = None) -> list[RecordedJob]:
        """Every recorded job matching the filter, in enqueue order, run or not."""
        f = _filter(task, args, queue, delay, group, id, priority)
        return [RecordedJob(**d) for d in self._native.jobs(**f)]

    def enqueued(self, *, task: Any = None, args: Any = _MISSING, queue: Any = None,
                 delay: Any = None, group: Optional[str] = None, id: Optional[str] = None,
                 priority: Optional[int] = None) -> list[RecordedJob]:
        """The recorded jobs matching the filter that have not run yet."""
        f = _filter(task, args, queue, delay, group, id, priority)
        return [RecordedJob(**d) for d in self._native.enqueued(**f)]

    def assert_enqueued(self, *, task: Any = None, args: Any = _MISSING, queue: Any = None,
                        delay: Any = None, group: Optional[str] = None, id: Optional[str] = None,
                        priority: Optional[int] = None) -> RecordedJob:
        """The first recorded job (run or not) matching the filter; ``AssertionError`` saying
        what was looked for and listing the jobs recorded when there is none."""
        f = _filter(task, args, queue, delay, group, id, priority)
        __tracebackhide__ = True
        return RecordedJob(**self._native.assert_enqueued(**f))

    def drain(self, handlers: Optional[Handlers] = None) -> DrainReport:
        """Run every recorded job not run yet, in enqueue order (delayed ones at once), and those
        their handlers enqueue, until none is left. Jobs run with the ``@queue.task`` functions
        of their queue, or ``handlers`` (``{"queue": {"task": fn}}`` or ``{"queue":
        handler(job)}``); a job of a queue with neither stays recorded. ``async def`` functions
        run on a private event loop: in async code, ``await drain_async()``."""
        return DrainReport(*self._native.drain(_resolve(handlers)))

    async def drain_async(self, handlers: Optional[Handlers] = None) -> DrainReport:
        """``drain`` for async code: ``async def`` functions run on the running event loop."""
        return DrainReport(*await self._native.drain_async(_resolve(handlers)))

    def clear(self) -> None:
        """Forget every recorded job."""
        self._native.clear()

    def __repr__(self) -> str:
        return f"<tideq.testing.TestMode {self.mode} ({len(self.jobs())} job(s) recorded)>"


def _registered() -> None:
    """A task was registered (``@queue.task``): an inline mode that is on runs it too."""
    mode = _inline
    if mode is not None and mode._native.is_on:
        mode._native.set_handlers(_resolve(mode._handlers))


_inline: Optional[TestMode] = None
_tasks._on_register.append(_registered)


def fake() -> TestMode:
    """Turn fake mode on: every enqueue in this process is checked and recorded, not sent or run.
    Use it as ``with tideq.testing.fake() as fake:`` (or call ``stop()``). ``InvalidArgumentError``
    when a mode is already on."""
    return TestMode(_tideq._testing_start("fake"))


def inline(handlers: Optional[Handlers] = None, raise_errors: bool = True) -> TestMode:
    """Turn inline mode on: every enqueue in this process runs its job at once, with the
    ``@queue.task`` functions of its queue, also those registered after it started (or
    ``handlers``, as ``drain`` takes them; a job of a queue with neither stays recorded). With ``raise_errors``, an enqueue whose job ends dead
    raises ``JobFailedError`` with the job's error. ``async def`` functions run on a private
    event loop. ``InvalidArgumentError`` when a mode is already on."""
    global _inline
    mode = TestMode(_tideq._testing_start("inline", _resolve(handlers), raise_errors), handlers)
    _inline = mode
    return mode
