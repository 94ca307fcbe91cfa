"""The worker side of the Django backend: ``tideq worker tideq.django.worker:queues`` (what
``python manage.py tideq_worker`` runs) serves every queue of the ``TideqBackend`` backends in
``settings.TASKS``, running each job's Django task by its module path.

Each worker process sets Django up (``DJANGO_SETTINGS_MODULE``, as ``manage.py`` sets it),
closes stale database connections around each task as a request would, and sends Django's
``task_started`` and ``task_finished`` signals.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

__all__ = ["queues", "run_task"]

_failure_classes: dict[str, type] = {}
_lock = threading.Lock()


def queues() -> dict[str, Callable[[Any], Any]]:
    """The ``tideq worker`` target: tideq queue name → job handler, for every queue of every
    ``TideqBackend`` in ``settings.TASKS``. The backend's ``URL`` becomes the default Redis URL
    (``--url`` still wins)."""
    import django

    django.setup()
    from django.tasks import task_backends

    from tideq.django import TideqBackend

    out: dict[str, Callable[[Any], Any]] = {}
    urls = set()
    for backend in task_backends.all():
        if not isinstance(backend, TideqBackend):
            continue
        urls.add(backend.url)
        for name in sorted(backend.queues):
            out[backend.tideq_queue_name(name)] = _handler(backend.alias)
    if not out:
        raise RuntimeError("settings.TASKS has no backend of tideq.django.TideqBackend")
    if len(urls) > 1:
        raise RuntimeError("settings.TASKS: the TideqBackend backends use different URLs; run "
                           "one `tideq worker` per URL with --url and --queues")
    (url,) = urls
    if url is not None:
        os.environ.setdefault("TIDEQ_REDIS_URL", url)
    return out


def _handler(alias: str) -> Callable[[Any], Any]:
    def handle(job: Any) -> Any:
        return run_task(alias, job)

    handle.__name__ = f"django_tasks_{alias}"
    return handle


def run_task(alias: str, job: Any) -> Any:
    """Runs the Django task a tideq job names, with its arguments; returns its JSON-normalised
    return value (stored as the job's result). An exception it raises is re-raised as a
    ``TaskFailed`` subclass named after its class path, so the worker records
    ``"pkg.mod.Class: message"``."""
    from django.db import close_old_connections
    from django.tasks.base import Task, TaskContext, TaskResult, TaskResultStatus
    from django.tasks.signals import task_finished, task_started
    from django.utils import timezone
    from django.utils.json import normalize_json
    from django.utils.module_loading import import_string

    from tideq import BackOff, DontRetry, Snooze

    if job.task is None:
        raise DontRetry("not a Django task: the job has no task name")
    try:
        task = import_string(job.task)
    except ImportError as e:
        raise DontRetry(f"cannot import task {job.task!r}: {e}") from None
    if not isinstance(task, Task):
        raise DontRetry(f"{job.task!r} is not a Django task (decorate it with @task)")
    data = job.args()
    args = list(data.get("args", [])) if isinstance(data, dict) else []
    kwargs = dict(data.get("kwargs", {})) if isinstance(data, dict) else {}
    now = timezone.now()
    result = TaskResult(
        task=task, id=job.id, status=TaskResultStatus.RUNNING, enqueued_at=None,
        started_at=now, last_attempted_at=now, finished_at=None, args=args, kwargs=kwargs,
        backend=alias, errors=[], worker_ids=["tideq"] * job.attempt,
    )
    close_old_connections()
    task_started.send(sender=type(task.get_backend()), task_result=result)
    try:
        if task.takes_context:
            value = task.call(TaskContext(task_result=result), *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
        out = normalize_json(value)
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        return out
    except (Snooze, BackOff, DontRetry):
        raise
    except Exception as e:
        object.__setattr__(result, "status", TaskResultStatus.FAILED)
        raise _failure(type(e))(str(e)) from e
    finally:
        object.__setattr__(result, "finished_at", timezone.now())
        task_finished.send(sender=type(task.get_backend()), task_result=result)
        close_old_connections()


def _failure(cls: type) -> type:
    """The ``TaskFailed`` subclass named after ``cls``'s path (made once per class)."""
    from tideq.django import TaskFailed

    path = f"{cls.__module__}.{cls.__qualname__}"
    with _lock:
        made = _failure_classes.get(path)
        if made is None:
            made = type(path, (TaskFailed,), {"__module__": TaskFailed.__module__})
            _failure_classes[path] = made
        return made
