"""One worker process of ``tideq worker``: the child the command's supervisor starts (a fresh
interpreter, ``python -m tideq._worker TARGET --supervised ...``, never a fork).

It imports TARGET (``module`` or ``module:attribute``), finds its queues, starts one worker per
queue it serves and hands them to ``tideq.serve`` (the core's ``serve``), which reports to the
supervisor, stops on SIGTERM/SIGINT and ends once the process's job limit is reached. Host-language
plumbing only: the queue logic, the signals and the status lines are the core's.

What TARGET may name:

- a ``Queue`` or ``AsyncQueue`` with ``@queue.task`` functions: its tasks;
- a mapping of queue name to a ``Queue``/``AsyncQueue``, to a job handler (a function taking the
  ``Job``) or to a mapping of task name to function; queues named there are opened on a client
  for ``--url`` (else ``$TIDEQ_REDIS_URL``);
- a callable (a function, ``async def`` too): called with no arguments, and what it returns
  resolved again;
- a module (``module`` alone): every ``Queue``/``AsyncQueue`` with tasks among its attributes.

Plain handlers run in worker threads; ``async def`` ones on one asyncio event loop when the
target holds an ``AsyncQueue`` (or an ``async def`` factory, or a mapping with an ``async def``
handler), else as a blocking ``Queue`` runs them.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any, Callable, NoReturn, Optional, Sequence, Union

PROG = "tideq worker"


class TargetError(Exception):
    """A target that cannot be served: the command ends with this one line (exit 1)."""


# -- arguments ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: {message}\n")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The child's arguments (exit 2 with a message on a bad one)."""
    p = _Parser(prog=PROG, add_help=True, allow_abbrev=False,
                description="One worker process of `tideq worker` (started by its supervisor).")
    p.add_argument("target", help="module or module:attribute")
    p.add_argument("--supervised", action="store_true")
    p.add_argument("--url", default=None)
    p.add_argument("--queues", default=None, type=_queues_spec)
    p.add_argument("--concurrency", default=None, type=_positive_int)
    p.add_argument("--max-jobs", default=None, type=_positive_int)
    p.add_argument("--shutdown-grace", default=None, type=_seconds)
    p.add_argument("--health", default=None)
    p.add_argument("--log-format", default="text", choices=["text", "json"])
    p.add_argument("--log-level", default=None, type=_log_level)
    return p.parse_args(list(argv))


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return n


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not s >= 0 or s == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds")
    return s


def _queues_spec(text: str) -> list[tuple[str, Optional[int]]]:
    """``emails=10,reports=2`` (a name alone takes ``--concurrency``)."""
    out: list[tuple[str, Optional[int]]] = []
    for part in text.split(","):
        name, eq, conc = part.strip().partition("=")
        name = name.strip()
        if not name:
            raise argparse.ArgumentTypeError(f"{text!r}: expected name=concurrency,...")
        if name in (n for n, _ in out):
            raise argparse.ArgumentTypeError(f"queue {name!r} is named twice")
        out.append((name, _positive_int(conc.strip()) if eq else None))
    return out


_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "warning": logging.WARNING,
           "info": logging.INFO, "debug": logging.DEBUG, "trace": logging.DEBUG}


def _log_level(text: str) -> int:
    level = _LEVELS.get(text.strip().lower())
    if level is None:
        raise argparse.ArgumentTypeError(f"{text!r}: one of {', '.join(_LEVELS)}")
    return level


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": os.getpid(),
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def setup_logging(fmt: str, level: Optional[int]) -> None:
    """Logs (the ``tideq`` logger's handler failures, the core's warnings) on stderr, as text or
    JSON lines, unless the application configured logging itself."""
    root = logging.getLogger()
    if root.handlers:
        if level is not None:
            root.setLevel(level)
        return
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(
            f"%(asctime)s %(levelname)s [pid {os.getpid()}] %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level if level is not None else logging.INFO)


# -- the target -----------------------------------------------------------------------------


def import_target(spec: str) -> tuple[Any, str]:
    """The object ``spec`` (``module`` or ``module:attribute``, the attribute may be dotted)
    names, and how to call it in messages."""
    module_name, colon, attr = spec.partition(":")
    if not module_name or (colon and not attr):
        raise TargetError(f'"{spec}" is not a target: write module or module:attribute '
                          "(e.g. app.tasks:queue)")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and module_name.startswith(e.name) and \
                module_name[len(e.name):len(e.name) + 1] in ("", "."):
            raise TargetError(f'no module named "{e.name}" (importing {module_name} from '
                              f"{os.getcwd()})") from None
        _print_user_traceback(e)
        raise TargetError(f"{module_name} failed to import: {_error_text(e)}") from None
    except BaseException as e:  # SyntaxError, an exception raised at import time, SystemExit
        _print_user_traceback(e)
        raise TargetError(f"{module_name} failed to import: {_error_text(e)}") from None
    if not colon:
        return module, module_name
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise TargetError(f'{module_name} has no attribute "{attr}"') from None
    return value, spec


def _print_user_traceback(e: BaseException) -> None:
    """The traceback of ``e`` on stderr from the first frame of the user's code (the import
    machinery's and this module's frames left out)."""
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != __file__ and not name.startswith("<frozen") and "importlib" not in name:
            break
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


def _error_text(e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        where = f" ({e.filename}, line {e.lineno})" if e.filename else ""
        return f"SyntaxError: {e.msg}{where}"
    return "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " ")


class Served:
    """One queue the process serves: an existing ``Queue``/``AsyncQueue`` (its tasks, or
    ``tasks``), or a queue opened by name with a job ``handler`` or ``tasks``."""

    def __init__(self, name: str, queue: Any = None, handler: Optional[Callable[..., Any]] = None,
                 tasks: Optional[Mapping[str, Any]] = None) -> None:
        self.name = name
        self.queue = queue
        self.handler = handler
        self.tasks = tasks

    def is_async(self) -> bool:
        """Whether it wants an event loop: an ``AsyncQueue``, or (opened by name) an
        ``async def`` handler."""
        from tideq import AsyncQueue

        if self.queue is not None:
            return isinstance(self.queue, AsyncQueue)
        funcs = [self.handler] if self.handler is not None else list((self.tasks or {}).values())
        return any(_is_async_function(f) for f in funcs)


def _is_async_function(f: Any) -> bool:
    target = getattr(f, "func", f)  # a Task
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None))


def _is_queue(value: Any) -> bool:
    from tideq import AsyncQueue, Queue

    return isinstance(value, (Queue, AsyncQueue))


def _of_queue(q: Any, where: str) -> Served:
    if not q._tasks:
        raise TargetError(f'{where}: queue "{q.name}" has no tasks (register them with '
                          "@queue.task, or name a mapping of queue names to handlers)")
    return Served(q.name, queue=q)


def resolve(value: Any, where: str, depth: int = 0) -> Union[list[Served], Any]:
    """The queues ``value`` serves, or, when calling a factory gave an awaitable, that
    awaitable (to be awaited on the event loop, then resolved again)."""
    if depth > 5:
        raise TargetError(f"{where}: a factory returned a factory five times over")
    if _is_queue(value):
        return [_of_queue(value, where)]
    if inspect.ismodule(value):
        seen: dict[int, Served] = {}
        for attr_value in list(vars(value).values()):
            if _is_queue(attr_value) and attr_value._tasks and id(attr_value) not in seen:
                seen[id(attr_value)] = Served(attr_value.name, queue=attr_value)
        if not seen:
            raise TargetError(f"{where} has no Queue with tasks (a Queue or AsyncQueue whose "
                              "functions are decorated with @queue.task)")
        return _no_twice(list(seen.values()), where)
    if isinstance(value, Mapping):
        return _of_mapping(value, where)
    if callable(value) and not isinstance(value, type):
        try:
            result = value()
        except Exception as e:
            _print_user_traceback(e)
            raise TargetError(f"{where}() raised {_error_text(e)}") from None
        if inspect.isawaitable(result):
            return result
        return resolve(result, f"{where}()", depth + 1)
    raise TargetError(f"{where} is a {type(value).__name__}: expected a Queue or AsyncQueue with "
                      "tasks, a mapping of queue names to handlers, a function returning one, "
                      "or a module")


def _of_mapping(value: Mapping[Any, Any], where: str) -> list[Served]:
    if not value:
        raise TargetError(f"{where} is an empty mapping: map queue names to handlers")
    out = []
    for name, v in value.items():
        if not isinstance(name, str) or not name:
            raise TargetError(f"{where}: the key {name!r} is not a queue name")
        if _is_queue(v):
            if v.name != name:
                raise TargetError(f'{where}: the key "{name}" names Queue "{v.name}"')
            out.append(_of_queue(v, where))
        elif isinstance(v, Mapping):
            if not v:
                raise TargetError(f'{where}["{name}"] is an empty mapping: map task names to '
                                  "functions")
            for task, f in v.items():
                if not isinstance(task, str) or not callable(f):
                    raise TargetError(f'{where}["{name}"]: {task!r} is not a task name with a '
                                      "function")
            out.append(Served(name, tasks=v))
        elif callable(v):
            out.append(Served(name, handler=v))
        else:
            raise TargetError(f'{where}["{name}"] is a {type(v).__name__}: expected a Queue, a '
                              "job handler (a function taking the job) or a mapping of task "
                              "names to functions")
    return _no_twice(out, where)


def _no_twice(served: list[Served], where: str) -> list[Served]:
    names: set[str] = set()
    for s in served:
        if s.name in names:
            raise TargetError(f'{where}: two queues named "{s.name}"')
        names.add(s.name)
    return served


def select(served: list[Served], spec: Optional[list[tuple[str, Optional[int]]]],
           where: str) -> list[tuple[Served, Optional[int]]]:
    """The queues ``--queues`` selects (each with its own concurrency), or all of them."""
    if spec is None:
        return [(s, None) for s in served]
    by_name = {s.name: s for s in served}
    unknown = [n for n, _ in spec if n not in by_name]
    if unknown:
        raise TargetError(f'{where} has no queue "{unknown[0]}" (its queues: '
                          f"{', '.join(sorted(by_name))})")
    return [(by_name[n], c) for n, c in spec]


# -- running --------------------------------------------------------------------------------


def _start(served: Served, concurrency: Optional[int], args: argparse.Namespace,
           client: Any, asyncio_mode: bool) -> Any:
    import tideq

    opts: dict[str, Any] = {}
    if concurrency is not None or args.concurrency is not None:
        opts["concurrency"] = concurrency if concurrency is not None else args.concurrency
    if args.shutdown_grace is not None:
        opts["grace"] = args.shutdown_grace
    if args.max_jobs is not None:
        opts["max_jobs"] = args.max_jobs
    q = served.queue
    if q is None:
        cls = tideq.AsyncQueue if asyncio_mode else tideq.Queue
        q = cls(served.name, client())
    if served.handler is not None:
        return q.work(served.handler, **opts)
    return q.work_tasks(served.tasks, **opts)


class _Client:
    """The client queues opened by name share, made on first use (``--url``, else
    ``$TIDEQ_REDIS_URL``)."""

    def __init__(self, url: Optional[str]) -> None:
        self.url = url
        self.made: Any = None

    def __call__(self) -> Any:
        if self.made is None:
            import tideq

            self.made = tideq.Client(self.url)
        return self.made


def _serve_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if args.health is not None:
        opts["health"] = args.health
    if args.max_jobs is not None:
        opts["max_jobs"] = args.max_jobs
    return opts


def _failed(workers: list[Any]) -> int:
    code = 0
    for w in workers:
        err = w.error
        if err is not None:
            print(f"{PROG}: a worker stopped on {type(err).__name__}: {err}", file=sys.stderr)
            code = 1
    return code


def run_blocking(selected: list[tuple[Served, Optional[int]]], args: argparse.Namespace) -> int:
    import tideq

    client = _Client(args.url)
    workers = []
    try:
        for served, conc in selected:
            workers.append(_start(served, conc, args, client, asyncio_mode=False))
        tideq.serve(*workers, **_serve_options(args))
    except tideq.TideqError as e:
        for w in workers:
            w.abort()
        print(f"{PROG}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return _failed(workers)


async def run_asyncio(pending: Any, where: str, args: argparse.Namespace) -> int:
    value = await pending
    where = f"{where}()"
    for _ in range(5):
        served = resolve(value, where)
        if not inspect.isawaitable(served):
            break
        value = await served
    else:
        raise TargetError(f"{where}: a factory returned a factory five times over")
    selected = select(served, args.queues, args.target)
    return await _serve_async(selected, args)


async def _serve_async(selected: list[tuple[Served, Optional[int]]],
                       args: argparse.Namespace) -> int:
    import tideq

    client = _Client(args.url)
    workers = []
    try:
        for served, conc in selected:
            workers.append(_start(served, conc, args, client, asyncio_mode=True))
        await tideq.serve_async(*workers, **_serve_options(args))
    except tideq.TideqError as e:
        for w in workers:
            w.abort()
        print(f"{PROG}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return _failed(workers)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(args.log_format, args.log_level)
    try:
        value, where = import_target(args.target)
        served = resolve(value, where)
        if inspect.isawaitable(served):
            return asyncio.run(run_asyncio(served, where, args))
        selected = select(served, args.queues, args.target)
        if any(s.is_async() for s, _ in selected):
            return asyncio.run(_serve_async(selected, args))
        return run_blocking(selected, args)
    except TargetError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
