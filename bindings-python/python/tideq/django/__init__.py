"""tideq as a Django 6 task backend (``django.tasks``): ``@task`` functions and ``.enqueue()``
run on tideq workers, and their results read back through Django's API.

In ``settings.py``::

    INSTALLED_APPS = [..., "tideq.django"]      # for the tideq_worker management command
    TASKS = {
        "default": {
            "BACKEND": "tideq.django.TideqBackend",
            "QUEUES": ["default", "emails"],     # Django queue names: one tideq queue each
            "OPTIONS": {"URL": "redis://127.0.0.1:6379"},
        }
    }

Then ``python manage.py tideq_worker`` runs the workers (``tideq worker``'s supervised
processes, with its options). ``OPTIONS`` keys: ``URL`` (default ``$TIDEQ_REDIS_URL``, else
``redis://127.0.0.1:6379``), ``PREFIX`` (the key prefix, default ``"tideq"``),
``QUEUE_PREFIX`` (prepended to each Django queue name to make the tideq queue's, default ``""``),
``MAX_ATTEMPTS`` (runs before a failing task is failed for good, default 1: Django's own
semantics, one run) and ``KEEP_COMPLETED`` (completed jobs whose results stay readable, default
the queue's).

A task's tideq job carries the task's module path as its task name and ``{"args": [...],
"kwargs": {...}}`` as JSON arguments, so the tideq tools (``tideq job``, the dashboard) show it
like any other task. Priorities map onto tideq's (Django's 100 runs first), ``run_after`` onto a
delay by the Redis clock.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Optional

from django.tasks import DEFAULT_TASK_QUEUE_NAME
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import Task, TaskError, TaskResult, TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils import timezone
from django.utils.json import normalize_json
from django.utils.module_loading import import_string

import tideq

if TYPE_CHECKING:
    from tideq import JobInfo

__all__ = ["TideqBackend", "TaskFailed"]

_TASK_MAX_PRIORITY = 100

_STATUS = {
    "ready": TaskResultStatus.READY,
    "delayed": TaskResultStatus.READY,
    "waiting": TaskResultStatus.READY,
    "active": TaskResultStatus.RUNNING,
    "completed": TaskResultStatus.SUCCESSFUL,
    "dead": TaskResultStatus.FAILED,
}


class TaskFailed(Exception):
    """The base of the exceptions a tideq worker records for a Django task that raised: each is
    named after the class path of what the task raised (``myapp.billing.PaymentError``), so the
    stored error reads ``"myapp.billing.PaymentError: card declined"`` and ``get_result`` gives
    it back as Django's ``TaskError``."""


class TideqBackend(BaseTaskBackend):
    """The ``django.tasks`` backend over tideq job queues (one per Django queue name)."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        opts = self.options
        unknown = set(opts) - {"URL", "PREFIX", "QUEUE_PREFIX", "MAX_ATTEMPTS", "KEEP_COMPLETED"}
        if unknown:
            raise ValueError(f"TASKS[{alias!r}]['OPTIONS']: unknown key(s) "
                             f"{', '.join(sorted(unknown))}")
        self.url: Optional[str] = opts.get("URL")
        self.prefix: Optional[str] = opts.get("PREFIX")
        self.queue_prefix: str = opts.get("QUEUE_PREFIX", "")
        self.max_attempts: int = int(opts.get("MAX_ATTEMPTS", 1))
        if self.max_attempts < 1:
            raise ValueError(f"TASKS[{alias!r}]['OPTIONS']['MAX_ATTEMPTS'] must be at least 1")
        self.keep_completed: Optional[int] = opts.get("KEEP_COMPLETED")
        self._client: Optional[tideq.Client] = None
        self._queues: dict[str, tideq.Queue] = {}

    # -- tideq handles ----------------------------------------------------------------------

    def client(self) -> tideq.Client:
        """The tideq client of this backend (made on first use, connected on first command)."""
        if self._client is None:
            kwargs: dict[str, Any] = {}
            if self.prefix is not None:
                kwargs["prefix"] = self.prefix
            self._client = tideq.Client(self.url, **kwargs)
        return self._client

    def tideq_queue_name(self, queue_name: str) -> str:
        """The tideq queue serving Django queue ``queue_name``."""
        return f"{self.queue_prefix}{queue_name}"

    def queue(self, queue_name: str = DEFAULT_TASK_QUEUE_NAME) -> tideq.Queue:
        """The tideq ``Queue`` serving Django queue ``queue_name``."""
        q = self._queues.get(queue_name)
        if q is None:
            kwargs: dict[str, Any] = {}
            if self.keep_completed is not None:
                kwargs["keep_completed"] = self.keep_completed
            q = tideq.Queue(self.tideq_queue_name(queue_name), self.client(), **kwargs)
            self._queues[queue_name] = q
        return q

    # -- django.tasks ------------------------------------------------------------------------

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        self.validate_task(task)
        options: dict[str, Any] = {
            "max_attempts": self.max_attempts,
            # Django: -100..100, larger first. tideq: 1 runs first; every job gets one so that
            # a larger Django priority always runs before a smaller one.
            "priority": _TASK_MAX_PRIORITY + 1 - int(task.priority),
        }
        if task.run_after is not None:
            options["delay"] = max(0.0, (task.run_after - timezone.now()).total_seconds())
        data = {"args": normalize_json(list(args)), "kwargs": normalize_json(dict(kwargs))}
        enqueued = self.queue(task.queue_name).enqueue_task(task.module_path, data, **options)
        result = TaskResult(
            task=task,
            id=enqueued.id,
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        for queue_name in sorted(self.queues) or [DEFAULT_TASK_QUEUE_NAME]:
            info = self.queue(queue_name).get(result_id)
            if info is not None and info.task is not None:
                return self._result(result_id, queue_name, info)
        raise TaskResultDoesNotExist(result_id)

    def _result(self, result_id: str, queue_name: str, info: JobInfo) -> TaskResult:
        try:
            task = import_string(info.task or "")
        except ImportError:
            raise TaskResultDoesNotExist(
                f"{result_id}: its task {info.task!r} cannot be imported here") from None
        if not isinstance(task, Task):
            raise TaskResultDoesNotExist(f"{result_id}: {info.task!r} is not a Django task")
        data = _json_args(info)
        status = _STATUS[info.state]
        since = _when(info.state_since_or_until)
        finished = since if status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED) else None
        errors = []
        if info.last_error is not None and status is not TaskResultStatus.SUCCESSFUL:
            errors.append(_task_error(info.last_error))
        result = TaskResult(
            task=task.using(queue_name=queue_name) if task.queue_name != queue_name else task,
            id=result_id,
            status=status,
            enqueued_at=_when(info.enqueued_at),
            started_at=None,
            last_attempted_at=finished,
            finished_at=finished,
            args=data.get("args", []),
            kwargs=data.get("kwargs", {}),
            backend=self.alias,
            errors=errors,
            worker_ids=["tideq"] * info.attempts,
        )
        if status is TaskResultStatus.SUCCESSFUL:
            object.__setattr__(result, "_return_value", info.result)
        return result


def _json_args(info: JobInfo) -> dict[str, Any]:
    import json

    try:
        data = json.loads(info.payload)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _when(epoch: Optional[float]) -> Optional[_dt.datetime]:
    if epoch is None:
        return None
    return _dt.datetime.fromtimestamp(epoch, tz=_dt.timezone.utc)


def _task_error(text: str) -> TaskError:
    """Django's ``TaskError`` from a recorded error (``"pkg.mod.Class: message"`` as the worker
    records a task's exception; another text, e.g. a timeout, as a ``TaskFailed``)."""
    head, _, _ = text.partition(": ")
    if "." in head and " " not in head:
        path = head
    else:
        path = f"{TaskFailed.__module__}.{TaskFailed.__qualname__}"
    return TaskError(exception_class_path=path, traceback=text)
