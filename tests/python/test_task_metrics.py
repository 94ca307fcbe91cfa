"""Per-task metrics (``Queue.task_metrics``, ``AsyncQueue.task_metrics``): after a Python worker
ran tasks, each task's counts and run times; a bad window is refused."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import tideq


def test_task_metrics_count_what_a_worker_ran_per_task(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)

    @q.task
    def mail(to: str) -> None:
        pass

    @q.task
    def bill(amount: int) -> None:
        raise RuntimeError("declined")

    for i in range(3):
        mail.enqueue(f"user{i}@example.com")
    bill.enqueue_with((10,), max_attempts=1)
    # The worker's last report (when it stops) carries its counts.
    q.run_tasks(poll_interval=0.05, stop_when_drained=True)
    got = {t.task: t for t in q.task_metrics()}
    assert set(got) == {"mail", "bill"}, got
    m = got["mail"]
    assert isinstance(m, tideq.TaskMetrics)
    assert (m.completed, m.failed, m.dead_lettered, m.runs) == (3, 0, 0, 3)
    assert m.run_ms_sum >= 0 and m.run_ms_avg == pytest.approx(m.run_ms_sum / 3)
    b = got["bill"]
    assert (b.completed, b.failed, b.dead_lettered, b.runs) == (0, 1, 1, 1)
    assert m.to_dict()["completed"] == 3
    assert repr(m).startswith("TaskMetrics(task='mail', completed=3, ")
    # Windows: seconds or a timedelta; the asyncio class reads the same.
    assert [t.task for t in q.task_metrics(3600)] == ["bill", "mail"]
    assert [t.task for t in q.task_metrics(datetime.timedelta(days=14))] == ["bill", "mail"]
    again = asyncio.run(tideq.AsyncQueue(name, client).task_metrics(86400))
    assert {t.task: t.completed for t in again} == {"bill": 0, "mail": 3}


@pytest.mark.parametrize("window", [30, 15 * 86400, -1])
def test_a_bad_window_is_refused(client: tideq.Client, name: str, window: float) -> None:
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Queue(name, client).task_metrics(window)
