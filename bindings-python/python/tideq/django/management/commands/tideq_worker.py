"""``python manage.py tideq_worker [tideq worker options]``: the tideq workers of this project's
``TideqBackend`` queues, as ``tideq worker tideq.django.worker:queues`` with the backend's URL.
Every option of ``tideq worker`` is accepted (``--processes``, ``--concurrency``,
``--queues``, ``--max-jobs-per-process``, ``--health``, ...)."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = ("Run tideq workers for the TideqBackend queues in settings.TASKS (the options are "
            "`tideq worker`'s: --processes, --concurrency, --queues, --health, ...)")

    def run_from_argv(self, argv: list[str]) -> None:
        # Every argument after the command's name goes to `tideq worker` as it is.
        self.execute(*argv[2:])

    def execute(self, *args: Any, **options: Any) -> None:
        from django.tasks import task_backends

        from tideq._cli import WORKER_CHILD
        from tideq._tideq import _run_cli
        from tideq.django import TideqBackend

        argv = ["tideq", "worker", "tideq.django.worker:queues", *args]
        urls = {b.url for b in task_backends.all() if isinstance(b, TideqBackend)}
        if len(urls) == 1 and None not in urls and "--url" not in args:
            argv += ["--url", next(iter(urls))]
        # The worker processes import the project as this process does: its directory first.
        project = os.path.dirname(os.path.abspath(sys.argv[0]))
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = project + (os.pathsep + path if path else "")
        sys.exit(_run_cli(argv, WORKER_CHILD))
