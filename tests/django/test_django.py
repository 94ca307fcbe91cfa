"""The example Django project (examples/django): tasks enqueued through django.tasks run on the
tideq workers `manage.py tideq_worker` starts, and their results read back through Django."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any, Iterator

import pytest
from tideq_harness import RedisServer, wait_for

from conftest import EXAMPLE

import django  # noqa: E402  (settings come from the server's URL, set before setup)


@pytest.fixture(scope="module")
def redis() -> Iterator[str]:
    server = RedisServer()
    os.environ["TIDEQ_REDIS_URL"] = server.url
    django.setup()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def worker(redis: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "tideq_worker", "--processes", "1", "--concurrency", "4",
         "--shutdown-grace", "5"],
        cwd=EXAMPLE, env={**os.environ, "TIDEQ_REDIS_URL": redis},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    yield proc
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode(errors="replace")


def finished(result: Any, timeout: float = 30) -> Any:
    assert wait_for(lambda: (result.refresh(), result.is_finished)[1], timeout, 0.05), \
        f"{result.id} still {result.status}"
    return result


def test_a_django_task_runs_on_a_tideq_worker_and_its_result_reads_back(worker: Any) -> None:
    from shop.tasks import send_receipt

    result = send_receipt.enqueue(7, email="ada@example.com")
    assert result.status == "READY"
    finished(result)
    assert result.status == "SUCCESSFUL"
    assert result.return_value == "receipt for order 7 sent to ada@example.com"
    assert result.args == [7] and result.kwargs == {"email": "ada@example.com"}
    again = send_receipt.get_result(result.id)
    assert again.return_value == result.return_value and again.attempts == 1
    assert again.task.queue_name == "receipts"


def test_the_django_queue_is_the_tideq_queue_named_by_queue_prefix(worker: Any) -> None:
    import tideq
    from shop.tasks import send_receipt

    result = finished(send_receipt.enqueue(8, email="bo@example.com"))
    info = tideq.Queue("shop-receipts").get(result.id)
    assert info is not None and info.task == "shop.tasks.send_receipt"
    assert info.state == "completed"


def test_a_task_that_raises_fails_with_its_exception_class_after_max_attempts(worker: Any) -> None:
    from shop.errors import PaymentDeclined
    from shop.tasks import charge

    ok = charge.enqueue(1, "visa")
    bad = charge.enqueue(2, card="declined")
    assert finished(ok).return_value == {"order": 1, "charged": True}
    finished(bad, 60)
    assert bad.status == "FAILED" and bad.attempts == 2
    (error,) = bad.errors
    assert error.exception_class is PaymentDeclined
    assert "card refused for order 2" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        bad.return_value


def test_a_task_taking_its_context_sees_its_attempt(worker: Any) -> None:
    from shop.tasks import flaky

    result = finished(flaky.enqueue(3), 60)
    assert result.status == "SUCCESSFUL" and result.return_value == 2 and result.attempts == 2


def test_an_async_task_runs(worker: Any) -> None:
    from shop.tasks import notify

    assert finished(notify.enqueue(4)).return_value == "order 4 shipped"


def test_run_after_defers_the_task_by_the_redis_clock(worker: Any) -> None:
    import tideq
    from django.utils import timezone
    from shop.tasks import send_receipt

    result = send_receipt.using(run_after=timezone.now() + timedelta(seconds=2)).enqueue(
        9, email="cy@example.com")
    info = tideq.Queue("shop-receipts").get(result.id)
    assert info is not None and info.state == "delayed"
    finished(result)
    assert result.status == "SUCCESSFUL"


def test_a_larger_django_priority_runs_first(worker: Any) -> None:
    """Priorities map onto tideq's: the ready jobs of a paused queue are listed in the order a
    worker takes them, Django's largest priority first."""
    import tideq
    from shop.tasks import charge

    q = tideq.Queue("shop-default")
    q.pause()
    try:
        low = charge.using(priority=-10).enqueue(10, "visa")
        high = charge.using(priority=90).enqueue(11, "visa")
        mid = charge.enqueue(12, "visa")
        ids = [j.id for j in q.jobs("ready") if j.id in {low.id, high.id, mid.id}]
        assert ids == [high.id, mid.id, low.id]
    finally:
        q.resume()
    for r in (low, high, mid):
        assert finished(r).status == "SUCCESSFUL"


def test_an_unknown_result_id_raises_task_result_does_not_exist(redis: str) -> None:
    from django.tasks.exceptions import TaskResultDoesNotExist
    from shop.tasks import charge

    with pytest.raises(TaskResultDoesNotExist):
        charge.get_result("no-such-job")


def test_bad_options_are_refused_when_the_backend_is_made() -> None:
    from tideq.django import TideqBackend

    with pytest.raises(ValueError, match="unknown key"):
        TideqBackend("x", {"OPTIONS": {"URLS": "redis://"}})
    with pytest.raises(ValueError, match="MAX_ATTEMPTS"):
        TideqBackend("x", {"OPTIONS": {"MAX_ATTEMPTS": 0}})


def test_a_queue_outside_the_backends_queues_is_refused(redis: str) -> None:
    from django.tasks.exceptions import InvalidTask
    from shop.tasks import charge

    with pytest.raises(InvalidTask):
        charge.using(queue_name="elsewhere").enqueue(1, "visa")
