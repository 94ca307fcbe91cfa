"""Tasks by name, the Python side: the ``@queue.task`` decorator, ``Task`` objects that bind
their function's arguments by parameter name, and the worker's dispatch of decoded arguments to
the functions. Host-language plumbing only: encoding, enqueueing, dead-lettering unknown names
and running the worker are the core's (``Queue.enqueue_task``, ``Queue.work_tasks``)."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar, Union

if TYPE_CHECKING:
    from tideq._tideq import AsyncQueue, Job, Queue

if sys.version_info >= (3, 10):
    from typing import ParamSpec

    P = ParamSpec("P")
else:  # Python 3.9 has no ParamSpec: the class is generic for type checkers only
    P = TypeVar("P")

R = TypeVar("R")

__all__ = ["Task", "AsyncTask", "task", "handlers", "registry"]

# Every task registered with ``@queue.task`` in this process, by queue name then task name: what
# ``tideq.testing`` runs jobs with (a later registration of a name replaces the earlier one).
_registry: dict[str, dict[str, _Task[Any, Any]]] = {}
# Called after each registration (tideq.testing: an inline mode picks up tasks registered after
# it started).
_on_register: list[Callable[[], None]] = []


def registry() -> dict[str, dict[str, Any]]:
    """A copy of the process-wide registry of ``@queue.task`` functions: queue name -> task name
    -> ``Task`` (what ``tideq.testing`` runs recorded jobs with)."""
    return {q: dict(tasks) for q, tasks in _registry.items()}


def _arguments(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``args`` and ``kwargs`` bound to ``func``'s parameters (``TypeError`` as a call would
    raise it), as a dict by parameter name (``**kwargs`` parameters merged in). A function taking
    ``*args`` gets a list when only positional arguments are given."""
    sig = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value and not kwargs and len(bound.arguments) == 1:
                return list(value)
            if value:
                raise TypeError(
                    f"task {func.__name__!r}: *{name} arguments cannot be sent by name; "
                    "pass them all positionally or use enqueue_task"
                )
        else:
            out[name] = value
    return out


class _Task(Generic[P, R]):
    """What ``Task`` and ``AsyncTask`` share: the function, its name and enqueue defaults."""

    def __init__(self, queue: Union[Queue, AsyncQueue], func: Callable[P, R], name: str,
                 defaults: dict[str, Any]) -> None:
        self.queue = queue
        self.func = func
        self.name = name
        self.defaults = defaults
        functools.update_wrapper(self, func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} of queue {self.queue.name!r}>"

    def _send(self, args: tuple[Any, ...], kwargs: dict[str, Any], options: dict[str, Any]) -> Any:
        data = _arguments(self.func, args, kwargs)
        return self.queue.enqueue_task(self.name, data, **{**self.defaults, **options})


class Task(_Task[P, R]):
    """A function registered as a task of a ``Queue`` (``@queue.task``). Calling it runs the
    function here; ``enqueue`` sends a job that a task worker runs by this task's ``name``."""

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """Enqueue a run of this task with these arguments (bound to the function's parameters
        by name, sent as a JSON object) and the decorator's enqueue options; returns the job
        id."""
        return str(self._send(args, kwargs, {}).id)

    def enqueue_with(self, args: tuple[Any, ...] = (), kwargs: Optional[dict[str, Any]] = None,
                     **options: Any) -> str:
        """``enqueue(*args, **kwargs)`` with per-call enqueue options (``id``, ``delay``,
        ``priority``, ``group``, ``format``, ``trace``, ...) over the decorator's; returns the job
        id."""
        return str(self._send(tuple(args), dict(kwargs or {}), options).id)


class AsyncTask(_Task[P, R]):
    """A task of an ``AsyncQueue``: as ``Task``, but ``enqueue`` returns an awaitable of the job
    id."""

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[str]:
        """Enqueue a run of this task (see ``Task.enqueue``); awaitable of the job id."""
        return _id(self._send(args, kwargs, {}))

    def enqueue_with(self, args: tuple[Any, ...] = (), kwargs: Optional[dict[str, Any]] = None,
                     **options: Any) -> Awaitable[str]:
        """``enqueue`` with per-call enqueue options; awaitable of the job id."""
        return _id(self._send(tuple(args), dict(kwargs or {}), options))


async def _id(enqueued: Awaitable[Any]) -> str:
    return str((await enqueued).id)


def task(queue: Union[Queue, AsyncQueue], func: Optional[Callable[..., Any]], name: Optional[str],
         defaults: Optional[dict[str, Any]]) -> Any:
    """``@queue.task`` and ``@queue.task(name=..., **enqueue defaults)``: registers ``func`` in the
    queue's tasks under ``name`` (default: the function's ``__name__``) and returns its ``Task``."""
    options = dict(defaults or {})

    def register(f: Callable[..., Any]) -> _Task[Any, Any]:
        if not callable(f):
            raise TypeError(f"@task decorates a function, not {type(f).__name__}")
        from tideq._tideq import AsyncQueue

        cls: type[_Task[Any, Any]] = AsyncTask if isinstance(queue, AsyncQueue) else Task
        t = cls(queue, f, name or f.__name__, options)
        queue._tasks[t.name] = t  # type: ignore[union-attr]
        _registry.setdefault(queue.name, {})[t.name] = t
        for hook in _on_register:
            hook()
        return t

    if func is None:
        return register
    return register(func)


def _call(func: Callable[..., Any], args: Any, piped: bool = False) -> Any:
    """The function called with decoded arguments: a dict as keywords, a list as positional
    arguments, anything else as the one argument. A chain's link or a chord's callback
    (``piped``: its arguments are the previous result, or the list of its children's results)
    gets them as its one argument, whatever they are."""
    if piped:
        return func(args)
    if isinstance(args, dict):
        return func(**args)
    if isinstance(args, list):
        return func(*args)
    return func(args)


def _handler(func: Callable[..., Any]) -> Callable[[Job], Any]:
    """A job handler running ``func`` with the job's decoded arguments (``async def`` stays
    ``async def``, so it runs on the event loop as any async handler)."""
    target = func.func if isinstance(func, _Task) else func
    if inspect.iscoroutinefunction(target):
        async def run_async(job: Job) -> Any:
            return await _call(target, job.args(), job.args_from is not None)

        return run_async

    def run(job: Job) -> Any:
        return _call(target, job.args(), job.args_from is not None)

    return run


def handlers(tasks: Mapping[str, Callable[..., Any]]) -> list[tuple[str, Callable[[Job], Any]]]:
    """(name, job handler) pairs of ``tasks`` (a mapping of names to functions or ``Task``s)."""
    if not isinstance(tasks, Mapping):
        raise TypeError(f"tasks must be a mapping of names to functions, not {type(tasks).__name__}")
    out = []
    for name, func in tasks.items():
        if not callable(func):
            raise TypeError(f"task {name!r}: {type(func).__name__} is not callable")
        out.append((name, _handler(func)))
    return out
