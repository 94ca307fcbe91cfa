"""Schedules (blocking and asyncio APIs): jobs enqueued on a cron pattern or at an interval,
fired by every worker of the queue, exactly one job per slot. One test per promise of the core
contract (core/tests/schedules.rs), checked across the Python/Rust crossing and across OS
processes, against a real redis-server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

import tideq
from resp import keys, server_ms
from tideq_harness import Awaiting, wait_for


@pytest.fixture(params=["blocking", "asyncio"])
def jq(request: pytest.FixtureRequest, client: tideq.Client, name: str) -> Any:
    """The queue under test, through the blocking API or the asyncio one."""
    if request.param == "blocking":
        return tideq.Queue(name, client)
    return Awaiting(tideq.AsyncQueue(name, client))


# A worker in its own process, on its own client: prints "started" once working, then one line
# per job it runs (its id), then its stats once stdin closes.
DRIVER = """
import json, sys, threading, tideq
url, name = sys.argv[1], sys.argv[2]
lock = threading.Lock()

def handler(job):
    with lock:  # handlers run in several threads: one whole line at a time
        print(json.dumps({"ran": job.id}), flush=True)

worker = tideq.Queue(name, url=url).work(handler, poll_interval=0.1)
print(json.dumps({"started": True}), flush=True)
sys.stdin.read()
s = worker.shutdown()
print(json.dumps({"completed": s.completed, "failed": s.failed}), flush=True)
"""


def slots_by_schedule(ids: list[str]) -> dict[str, list[int]]:
    """Slot times per schedule name, from the job ids ("<name>@<slot ms>"), sorted."""
    out: dict[str, list[int]] = {}
    for job_id in ids:
        schedule, slot = job_id.rsplit("@", 1)
        out.setdefault(schedule, []).append(int(slot))
    return {k: sorted(v) for k, v in out.items()}


def test_five_processes_driving_the_same_schedules_for_ten_seconds_make_exactly_one_job_per_slot(
    client, name, redis_url
):
    q = tideq.Queue(name, client)
    q.upsert_schedule("tick", b"i", every=1)
    q.upsert_schedule("cron", b"c", cron="* * * * * *")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DRIVER, redis_url, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    outputs: list[str] = []
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert json.loads(line or "{}") == {"started": True}, f"child failed: {p.stderr.read() if p.stderr else ''}"
        time.sleep(10)
        for p in procs:
            assert p.stdin is not None
            p.stdin.close()
        for p in procs:
            assert p.stdout is not None and p.stderr is not None
            out, err = p.stdout.read(), p.stderr.read()  # both small: read one after the other
            assert p.wait(30) == 0, err
            outputs.append(out)
    finally:
        for p in procs:
            p.kill()
            p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                if f is not None:
                    f.close()
    ran: list[str] = []
    for out in outputs:
        lines = [json.loads(line) for line in out.splitlines()]
        ran += [line["ran"] for line in lines if "ran" in line]
        assert lines[-1]["failed"] == 0
    twice = [i for i, n in Counter(ran).items() if n > 1]
    assert twice == [], "a slot's job ran twice"
    # Jobs of the last slots may still wait once the workers stopped: they count as made.
    left = [i.id for state in ("ready", "delayed") for i in q.jobs(state, limit=1000)]
    made = set(ran) | set(left)
    assert q.stats().enqueued == len(made), "a job was made that no id accounts for"
    slots = slots_by_schedule(sorted(made))
    assert set(slots) == {"tick", "cron"}
    for schedule, times in slots.items():
        assert len(times) >= 9, f"{schedule}: {times}"
        gaps = {b - a for a, b in zip(times, times[1:])}
        assert gaps == {1000}, f"{schedule}: a slot was skipped or ran twice: {times}"
        assert all(t % 1000 == 0 for t in times)
    assert all(i.payload == b"i" for i in q.jobs("completed", limit=1000) if i.id.startswith("tick@"))


def test_declaring_the_same_schedule_again_keeps_its_next_slot_and_schedules_lists_it(jq):
    spec: dict[str, Any] = dict(
        cron="0 9 * * 1-5", timezone="Europe/Paris", task="report", priority=3, group="acme",
        max_attempts=2, backoff=tideq.Backoff.fixed(5), timeout=60.0,
    )
    first = jq.upsert_schedule("daily", b'"p"', **spec)
    assert isinstance(first, int)
    assert jq.upsert_schedule("daily", b'"p"', **spec) == first
    assert (first // 3_600_000) % 24 in (7, 8), "09:00 in Paris is 07:00 or 08:00 UTC"
    assert jq.upsert_schedule("tick", every=2.5) is not None
    daily, tick = jq.schedules()
    assert isinstance(daily, tideq.ScheduleInfo)
    assert (daily.name, daily.cron, daily.timezone, daily.every, daily.payload) == (
        "daily", "0 9 * * 1-5", "Europe/Paris", None, b'"p"'
    )
    assert daily.next_run_ms == first
    assert (daily.task, daily.format, daily.priority, daily.group, daily.max_attempts, daily.timeout) == (
        "report", "json", 3, "acme", 2, 60.0
    )
    assert daily.backoff == tideq.Backoff.fixed(5)
    assert (tick.name, tick.cron, tick.timezone, tick.every, tick.payload) == ("tick", None, None, 2.5, b"")
    assert (tick.task, tick.priority, tick.group, tick.max_attempts, tick.backoff, tick.timeout) == (None,) * 6
    assert tick.next_run_ms is not None and tick.next_run_ms % 2500 == 0
    assert repr(daily) == (
        f"ScheduleInfo(name='daily', cron='0 9 * * 1-5', timezone='Europe/Paris', next_run_ms={first}, "
        "payload=<3 bytes>, task='report', format='json', priority=3, group='acme', max_attempts=2, "
        "backoff=Backoff.fixed(5.0), timeout=60.0)"
    )
    assert repr(tick) == f"ScheduleInfo(name='tick', every=2.5, next_run_ms={tick.next_run_ms}, payload=<0 bytes>)"
    assert daily == jq.schedules()[0]
    assert jq.remove_schedule("daily") is True
    assert jq.remove_schedule("daily") is False
    assert [s.name for s in jq.schedules()] == ["tick"]


def test_a_scheduled_job_carries_the_schedules_payload_and_options(client, name, redis_url):
    q = tideq.Queue(name, client)
    before = server_ms(redis_url)
    q.upsert_schedule("s", b"data", every=0.2, priority=4, group="g", max_attempts=7, timeout=9.0)
    jobs: list[tideq.Job] = []
    worker = q.work(jobs.append, poll_interval=0.1)
    try:
        assert wait_for(lambda: jobs, timeout=10)
    finally:
        worker.shutdown()
    job = jobs[0]
    name_part, slot = job.id.rsplit("@", 1)
    assert name_part == "s" and int(slot) % 200 == 0 and int(slot) >= before
    assert (job.payload, job.max_attempts, job.timeout) == (b"data", 7, 9.0)


def test_a_removed_schedule_fires_no_more(client, name):
    q = tideq.Queue(name, client)
    q.upsert_schedule("s", b"x", every=0.1)
    seen: list[str] = []
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            seen.append(job.id)

    worker = q.work(handler, poll_interval=0.1)
    try:
        assert wait_for(lambda: seen, timeout=10)
        assert q.remove_schedule("s") is True
        time.sleep(0.2)  # a slot being fired as it was removed may still run
        n = len(seen)
        time.sleep(0.6)
        assert len(seen) == n, "a removed schedule fired"
    finally:
        worker.shutdown()
    assert q.schedules() == []


BAD_SCHEDULES: list[tuple[str, dict[str, Any]]] = [
    ("a", {"cron": "not a cron"}),
    ("a", {"cron": "61 * * * *"}),
    ("a", {"cron": "0 0 30 2 *"}),  # never occurs
    ("a", {"cron": "* * * * *", "timezone": "Mars/Olympus"}),
    ("a", {"every": 0}),
    ("a", {"every": 0.001}),
    ("a", {"every": -1.0}),
    ("a", {"cron": "* * * * *", "every": 1.0}),
    ("a", {}),
    ("a", {"every": 1.0, "timezone": "Europe/Paris"}),
    ("", {"every": 1.0}),
    ("n" * 201, {"every": 1.0}),
    ("a", {"every": 1.0, "priority": 0}),
    ("a", {"every": 1.0, "task": ""}),
    ("a", {"every": 1.0, "format": "xml"}),
]


def test_bad_schedules_are_refused_and_nothing_is_written(jq, redis_url, name):
    for schedule, options in BAD_SCHEDULES:
        with pytest.raises(tideq.InvalidArgumentError):
            jq.upsert_schedule(schedule, b"x", **options)
    assert jq.schedules() == []
    assert keys(redis_url, f"*{name}*") == [], "nothing written"


def start(q: tideq.Queue, method: str, seen: list[str], **options: Any) -> tideq.Worker:
    """A worker of ``q`` started with ``method`` (``work``, ``work_batches``, ``work_tasks``)
    that records the ids of the jobs it runs."""
    if method == "work":
        return q.work(lambda job: seen.append(job.id), poll_interval=0.1, **options)
    if method == "work_batches":
        return q.work_batches(lambda jobs: seen.extend(j.id for j in jobs), size=2, poll_interval=0.1, **options)
    return q.work_tasks({"noop": lambda: seen.append("noop")}, poll_interval=0.1, **options)


@pytest.mark.parametrize("method", ["work", "work_batches", "work_tasks"])
def test_a_worker_started_with_schedules_false_fires_nothing(client, name, method):
    q = tideq.Queue(name, client)
    next_run = q.upsert_schedule("s", b"[]", every=0.1, task="noop", format="json")
    seen: list[str] = []
    worker = start(q, method, seen, schedules=False)
    time.sleep(1.0)
    worker.shutdown()
    assert seen == [] and q.stats().enqueued == 0
    (info,) = q.schedules()
    assert info.next_run_ms == next_run, "the schedule did not move on"
    assert (info.task, info.format) == ("noop", "json")
    # The same worker with the default fires it.
    worker = start(q, method, seen)
    try:
        assert wait_for(lambda: seen, timeout=10)
    finally:
        worker.shutdown()


def test_an_asyncio_worker_started_with_schedules_false_fires_nothing(client, name):
    async def main() -> tuple[list[str], tideq.JobStats]:
        aq = tideq.AsyncQueue(name, client)
        await aq.upsert_schedule("s", b"x", every=0.1)
        seen: list[str] = []

        async def handler(job: tideq.Job) -> None:
            seen.append(job.id)

        worker = aq.work(handler, poll_interval=0.1, schedules=False)
        await asyncio.sleep(1.0)
        await worker.shutdown()
        return seen, await aq.stats()

    seen, stats = asyncio.run(main())
    assert seen == [] and stats.enqueued == 0


def test_a_task_schedule_without_a_format_runs_its_task_and_arguments_that_do_not_decode_are_refused(
        client, name):
    """``upsert_schedule("tick", b"[]", every=1, task="tick")`` was accepted, then every fired job
    failed "has no task arguments" and was retried: JSON is now the default, and arguments that
    do not decode are refused when the schedule is set."""
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.InvalidArgumentError, match="not JSON"):
        q.upsert_schedule("tick", b"not json", every=0.05, task="tick")
    with pytest.raises(tideq.InvalidArgumentError):
        q.upsert_schedule("tick", b"\x92\x01", every=0.05, task="tick", format="msgpack")
    assert q.schedules() == []
    q.upsert_schedule("tick", b"[1, 2]", every=0.05, task="tick")
    (info,) = q.schedules()
    assert info.format == "json"
    seen: list[tuple[int, int]] = []
    with q.work_tasks({"tick": lambda a, b: seen.append((a, b))}, poll_interval=0.05):
        assert wait_for(lambda: seen, timeout=10)
    assert seen[0] == (1, 2) and q.stats().dead == 0
