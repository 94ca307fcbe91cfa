"""A job's attempts and its log from Python (issue 43, "Attempts and logs per job"): each attempt
with its error and the handler's traceback, ``job.log`` lines read back with ``job_logs`` and
``get``, the errors a log line can meet, a SIGKILLed worker's lost attempt, and the test modes.
The core keeps the rules (core/tests/attempts.rs)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import tideq
import tideq.testing

FAST = tideq.Backoff.fixed(0.02)


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


def drain(q: tideq.Queue, handler) -> tideq.WorkerStats:  # type: ignore[no-untyped-def]
    return q.run(handler, poll_interval=0.05, stop_when_drained=True)


def test_a_job_that_failed_twice_then_succeeded_shows_each_attempt_with_its_traceback_and_logs(jq):
    jq.enqueue(b"x", id="j", max_attempts=5)

    def send(job: tideq.Job) -> None:
        job.log(f"attempt {job.attempt}")
        if job.attempt < 3:
            raise ValueError(f"smtp down {job.attempt}")

    stats = drain(jq, send)
    assert (stats.failed, stats.completed) == (2, 1)
    info = jq.get("j")
    assert info is not None
    h = info.attempt_history
    assert [(a.attempt, a.outcome) for a in h] == [(1, "failed"), (2, "failed"), (3, "completed")]
    assert h[0].error == "ValueError: smtp down 1"
    assert h[0].trace is not None
    assert h[0].trace.startswith("Traceback (most recent call last):")
    assert 'job.log(f"attempt' in h[0].trace or "in send" in h[0].trace
    assert h[0].trace.rstrip().endswith("ValueError: smtp down 1")
    assert h[2].trace is None and h[2].error is None
    for a in h:
        assert a.started_at is not None and a.ended_at is not None and a.started_at <= a.ended_at
        assert a.duration_ms == a.ended_at - a.started_at and a.worker
    assert info.started_at == h[2].started_at and info.run_ms == h[2].duration_ms
    logs = jq.job_logs("j")
    assert [(l.attempt, l.line) for l in logs] == [(1, "attempt 1"), (2, "attempt 2"), (3, "attempt 3")]
    assert info.logs == logs
    assert info.to_dict()["attempt_history"][0]["outcome"] == "failed"


def test_an_async_handler_logs_with_log_async(client, name):
    aq = tideq.AsyncQueue(name, client, backoff=FAST)

    async def main() -> list[tideq.LogLine]:
        await aq.enqueue(b"x", id="a")

        async def handler(job: tideq.Job) -> None:
            await job.log_async("from async")

        await aq.run(handler, poll_interval=0.05, stop_when_drained=True)
        return await aq.job_logs("a")

    assert [l.line for l in asyncio.run(main())] == ["from async"]


def test_a_log_line_that_is_not_text_too_long_or_for_a_job_gone_is_refused(jq):
    jq.enqueue(b"x", id="a")
    (job,) = jq.lease_jobs(1, lease=60)
    with pytest.raises((TypeError, tideq.InvalidArgumentError)):
        job.log(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError, match="4096"):
        job.log("y" * 4097)
    job.log("y" * 4096)
    assert len(jq.job_logs("a")) == 1
    jq.cancel("a")
    jq.fail(job, "stopped")
    with pytest.raises(tideq.JobNotFoundError):
        job.log("after")
    with pytest.raises(tideq.JobNotFoundError):
        jq.job_logs("a")
    with pytest.raises(tideq.JobNotFoundError):
        jq.job_logs("nobody")


def test_a_worker_killed_with_sigkill_leaves_a_lost_attempt_then_a_completed_one(jq, redis_url, name):
    jq.enqueue(b"x", id="k", max_attempts=3)
    code = textwrap.dedent(f"""
        import sys, time, tideq
        q = tideq.Queue({name!r}, url={redis_url!r})
        def handler(job):
            job.log("started")
            print("running", flush=True)
            time.sleep(600)
        q.run(handler, lease=0.5)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "running"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(0.6)
    drain(jq, lambda job: None)
    info = jq.get("k")
    assert info is not None and info.state == "completed"
    assert [(a.attempt, a.outcome) for a in info.attempt_history] == [(1, "lost"), (2, "completed")]
    assert "lease expired" in (info.attempt_history[0].error or "")
    assert [(l.attempt, l.line) for l in info.logs] == [(1, "started")]


def test_in_the_test_modes_job_log_records_into_the_recorded_job():
    qname = f"logs-inline-{uuid.uuid4().hex[:8]}"
    q = tideq.Queue(qname, url="redis://127.0.0.1:1")

    def handler(job: tideq.Job) -> None:
        job.log("one")
        job.log("two")

    with tideq.testing.inline({qname: handler}) as mode:
        q.enqueue(b"x", id="i")
        (rec,) = mode.jobs(queue=qname)
        assert rec.logs == ["one", "two"]
        assert [l.line for l in q.job_logs("i")] == ["one", "two"]
    with tideq.testing.fake() as fake:
        q.enqueue(b"x", id="f")
        fake.drain({qname: handler})
        assert fake.jobs(queue=qname)[0].logs == ["one", "two"]
