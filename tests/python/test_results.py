"""Results, progress and ``wait`` from Python: what a handler returns (JSON-encoded, bytes as
they are) and reports is read back by ``get``; ``wait`` answers for jobs finished before the call
and wakes at once for later ones; blocking and asyncio."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import tideq
from resp import command


def drain(q: tideq.Queue, handler: Any) -> None:
    w = q.work(handler, stop_when_drained=True, poll_interval=0.05)
    w.join(timeout=20)


def test_a_handlers_return_value_is_stored_and_read_by_get(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    for i in ["dict", "bytes", "none", "text"]:
        q.enqueue(i.encode(), id=i)

    def handler(job: tideq.Job) -> Any:
        return {"dict": {"sent": 3, "to": ["ada"]}, "bytes": b"\x00\xff", "none": None, "text": "ok"}[job.id]

    drain(q, handler)
    info = q.get("dict")
    assert info is not None and info.state == "completed"
    assert info.result == {"sent": 3, "to": ["ada"]}
    assert info.result_bytes == b'{"sent":3,"to":["ada"]}'
    raw = q.get("bytes")
    assert raw is not None and raw.result == b"\x00\xff" and raw.result_bytes == b"\x00\xff"
    none = q.get("none")
    assert none is not None and none.result is None and none.result_bytes is None
    text = q.get("text")
    assert text is not None and text.result == "ok"


def test_a_return_value_that_is_not_json_able_fails_the_attempt(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client, max_attempts=1)
    q.enqueue(b"", id="odd")
    drain(q, lambda job: {1, 2})
    info = q.get("odd")
    assert info is not None and info.state == "dead"
    assert info.last_error is not None and info.last_error.startswith("TypeError: the handler's return value")


def test_a_result_over_max_result_len_fails_the_attempt(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client, max_attempts=1, max_result_len=8)
    q.enqueue(b"", id="big")
    refused: list[type] = []

    def handler(job: tideq.Job) -> bytes:
        try:
            job.progress("x" * 20)
        except tideq.PayloadTooLargeError as e:
            refused.append(type(e))
        return b"123456789"

    drain(q, handler)
    info = q.get("big")
    assert info is not None and info.state == "dead" and info.result is None
    assert info.last_error is not None and "max_result_len is 8" in info.last_error
    assert refused == [tideq.PayloadTooLargeError]


def test_progress_is_visible_while_the_job_runs(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"", id="p")
    reported, finish = threading.Event(), threading.Event()

    def handler(job: tideq.Job) -> str:
        job.progress({"pct": 50})
        reported.set()
        finish.wait(10)
        return "done"

    w = q.work(handler, stop_when_drained=True, poll_interval=0.05)
    assert reported.wait(10)
    info = q.get("p")
    assert info is not None and info.state == "active"
    assert info.progress == {"pct": 50} and info.progress_bytes == b'{"pct":50}'
    finish.set()
    w.join(timeout=10)
    assert q.wait("p", timeout=5) == "done"


def test_results_go_with_trimmed_jobs(client: tideq.Client, name: str, redis_url: str) -> None:
    q = tideq.Queue(name, client, keep_completed=1)
    for i in range(4):
        q.enqueue(b"", id=f"j{i}")

    def handler(job: tideq.Job) -> list[str]:
        job.progress(1)
        return [job.id]

    drain(q, handler)
    assert command(redis_url, "HLEN", f"tideq:{{{name}}}:results") == 1
    assert command(redis_url, "HLEN", f"tideq:{{{name}}}:progress") == 1
    q.enqueue(b"", id="dies", max_attempts=1)

    def fails(job: tideq.Job) -> None:
        job.progress("almost")
        raise RuntimeError("no")

    drain(q, fails)
    assert command(redis_url, "HLEN", f"tideq:{{{name}}}:progress") == 2
    assert q.purge() == 1
    assert command(redis_url, "HLEN", f"tideq:{{{name}}}:progress") == 1


def test_wait_for_a_job_that_finished_before_the_call(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"", id="early")
    drain(q, lambda job: {"answer": 42})
    t = time.monotonic()
    assert q.wait("early") == {"answer": 42}
    assert time.monotonic() - t < 0.5


def test_wait_returns_promptly_when_the_job_finishes_later(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"", id="later")
    finished: list[float] = []
    got: list[Any] = []

    def waiter() -> None:
        got.append(q.wait("later", timeout=20))
        got.append(time.monotonic())

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)

    def handler(job: tideq.Job) -> str:
        finished.append(time.monotonic())
        return "later done"

    drain(q, handler)
    t.join(10)
    assert got[0] == "later done"
    assert got[1] - finished[0] < 0.5, "woken by the completion, not by a poll"


def test_wait_on_a_dead_lettered_job_raises_its_error(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client, max_attempts=1)
    q.enqueue(b"", id="dies")

    def handler(job: tideq.Job) -> None:
        raise ValueError("smtp refused")

    drain(q, handler)
    with pytest.raises(tideq.JobFailedError, match="ValueError: smtp refused") as e:
        q.wait("dies")
    assert e.value.code == "JOB_FAILED"
    with pytest.raises(tideq.JobNotFoundError):
        q.wait("nobody")


def test_wait_timeout_raises_timeout_error(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"", id="slow")
    t = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        q.wait("slow", timeout=0.3)
    assert isinstance(e.value, tideq.TimeoutError) and e.value.code == "TIMEOUT"
    assert 0.3 <= time.monotonic() - t < 1.5


def test_progress_after_a_lost_lease_raises_lease_lost(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"", id="x")
    (job,) = q.lease_jobs(1, lease=0.05)
    time.sleep(0.2)
    (again,) = q.lease_jobs(1, lease=30)
    with pytest.raises(tideq.LeaseLostError):
        job.progress("late")
    again.progress("current")
    info = q.get("x")
    assert info is not None and info.progress == "current"


def test_asyncio_results_progress_and_wait(client: tideq.Client, name: str) -> None:
    async def main() -> None:
        q = tideq.AsyncQueue(name, client)
        await q.enqueue(b"", id="a")

        async def handler(job: tideq.Job) -> dict[str, int]:
            await job.progress_async({"step": 1})
            return {"n": 1}

        waiting = asyncio.ensure_future(q.wait("a", timeout=20))
        w = q.work(handler, stop_when_drained=True, poll_interval=0.05)
        assert await waiting == {"n": 1}
        await w.join()
        info = await q.get("a")
        assert info is not None and info.result == {"n": 1} and info.progress == {"step": 1}
        with pytest.raises(tideq.TimeoutError):
            await q.enqueue(b"", id="b")
            await q.wait("b", timeout=0.1)

    asyncio.run(main())


def test_task_return_values_are_results(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)

    @q.task
    def add(a: int, b: int) -> int:
        return a + b

    job_id = add.enqueue(2, 3)
    w = q.work_tasks(stop_when_drained=True, poll_interval=0.05)
    w.join(timeout=20)
    assert q.wait(job_id, timeout=5) == 5


def _connections(redis_url: str) -> int:
    info = command(redis_url, "INFO", "clients").decode()
    return int(info.split("connected_clients:")[1].split()[0])


def test_two_thousand_concurrent_waits_share_one_connection_and_each_gets_its_result(
    client: tideq.Client, name: str, redis_url: str
) -> None:
    q = tideq.Queue(name, client)
    q.enqueue_many([(f"r{i}".encode(), {"id": f"w{i}"}) for i in range(2000)])
    aq = tideq.AsyncQueue(name, client)
    waiters = f"tideq:{{{name}}}:waiters"

    async def main() -> list[Any]:
        before = _connections(redis_url)
        waits = [asyncio.ensure_future(aq.wait(f"w{i}", timeout=60)) for i in range(2000)]
        deadline = time.monotonic() + 30
        while command(redis_url, "HLEN", waiters) < 2000:
            assert time.monotonic() < deadline, "the waits did not register"
            await asyncio.sleep(0.05)
        added = _connections(redis_url) - before
        assert added <= 3, f"2,000 waits opened {added} connections"
        await asyncio.to_thread(drain, q, lambda job: {"r": job.text()})
        return await asyncio.gather(*waits)

    assert asyncio.run(main()) == [{"r": f"r{i}"} for i in range(2000)]
    assert command(redis_url, "HLEN", waiters) == 0


def test_cancelled_asyncio_waits_take_their_registration_off(client: tideq.Client, name: str, redis_url: str) -> None:
    q = tideq.AsyncQueue(name, client)
    waiters = f"tideq:{{{name}}}:waiters"

    async def main() -> None:
        await q.enqueue(b"", id="never", delay=3600)
        waits = [asyncio.ensure_future(q.wait("never")) for _ in range(20)]
        deadline = time.monotonic() + 10
        while command(redis_url, "HGET", waiters, "never") is None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        for w in waits:
            w.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        deadline = time.monotonic() + 10
        while command(redis_url, "HLEN", waiters) != 0:
            assert time.monotonic() < deadline, "cancelled waits left their registrations"
            await asyncio.sleep(0.05)

    asyncio.run(main())
