"""Tasks by name from Python: the ``@queue.task`` decorator, argument binding by parameter name,
dispatch of decoded arguments (dict, list, other), MessagePack, unknown task names dead-lettered at
once, asyncio, and mypy checking ``Task.enqueue``'s arguments against the function."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import tideq


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.05))


def drain_tasks(q: tideq.Queue, tasks: Any = None) -> tideq.WorkerStats:
    return q.run_tasks(tasks, poll_interval=0.1, stop_when_drained=True)


def test_enqueue_via_decorator_runs_the_function_by_name(jq):
    seen: list[tuple[str, int]] = []

    @jq.task
    def send_welcome(to: str, times: int = 1) -> str:
        seen.append((to, times))
        return "sent"

    assert isinstance(send_welcome, tideq.Task) and send_welcome.name == "send_welcome"
    assert send_welcome("direct") == "sent" and seen == [("direct", 1)], "calling it runs it here"
    seen.clear()
    job_id = send_welcome.enqueue("ada@example.com", times=2)
    assert isinstance(job_id, str)
    info = jq.get(job_id)
    assert info is not None and info.state == "ready"
    assert info.task == "send_welcome" and "task='send_welcome'" in repr(info)
    assert drain_tasks(jq).completed == 1
    assert seen == [("ada@example.com", 2)]
    raw = jq.get(jq.enqueue(b"raw bytes").id)
    assert raw is not None and raw.task is None, "a raw payload has no task"


def test_positional_and_keyword_arguments_bind_to_parameter_names(jq):
    got: list[Any] = []

    @jq.task(name="add", priority=3)
    def add(a: int, b: int = 10, *, scale: int = 1) -> None:
        got.append((a + b) * scale)

    assert add.name == "add"
    id1 = add.enqueue(1, 2)
    id2 = add.enqueue(b=5, a=1, scale=2)
    id3 = add.enqueue_with(args=(4,), kwargs={"scale": 3}, priority=1, id="third")
    assert id3 == "third"
    i1 = jq.get(id1)
    assert i1 is not None and i1.payload == b'{"a":1,"b":2}' and i1.priority == 3
    i2 = jq.get(id2)
    assert i2 is not None and i2.payload == b'{"a":1,"b":5,"scale":2}'
    with pytest.raises(TypeError):
        add.enqueue(1, 2, 3)  # type: ignore[call-arg]
    jq.run_tasks(concurrency=1, poll_interval=0.1, stop_when_drained=True)
    assert got == [42, 3, 12], "priority 1 first, then the two of priority 3 in order"


def test_enqueue_task_dispatches_dict_list_and_single_values(jq):
    got: list[Any] = []

    def kw(**k: Any) -> None:
        got.append(("kw", k))

    def pos(*a: Any) -> None:
        got.append(("pos", a))

    def one(x: Any) -> None:
        got.append(("one", x))

    jq.enqueue_task("kw", {"x": 1, "y": [1, 2]})
    jq.enqueue_task("pos", [1, "two", None])
    jq.enqueue_task("one", "text")
    drain_tasks(jq, {"kw": kw, "pos": pos, "one": one})
    assert sorted(got, key=lambda g: g[0]) == [("kw", {"x": 1, "y": [1, 2]}), ("one", "text"), ("pos", (1, "two", None))]


def test_msgpack_format_carries_bytes_and_is_shown_on_the_job(jq):
    seen: list[Any] = []

    def handler(job: tideq.Job) -> None:
        seen.append((job.task, job.format, job.args()))

    jq.enqueue_task("blob", {"data": b"\x00\xff", "n": 2**40}, format="msgpack")
    jq.enqueue_task("blob", [1.5, True], format="json")
    jq.run(handler, poll_interval=0.1, stop_when_drained=True)
    assert sorted(seen, key=lambda s: s[1]) == [("blob", "json", [1.5, True]), ("blob", "msgpack", {"data": b"\x00\xff", "n": 2**40})]
    with pytest.raises(tideq.InvalidArgumentError):
        jq.enqueue_task("blob", {}, format="yaml")  # type: ignore[arg-type]


def test_args_of_a_raw_job_raise_a_clear_error(jq):
    jq.enqueue(b"raw bytes")
    (job,) = jq.lease_jobs(1, lease=5)
    assert (job.task, job.format) == (None, None)
    with pytest.raises(tideq.InvalidArgumentError, match="raw payload"):
        job.args()


def test_unknown_or_missing_task_name_is_dead_lettered_at_once_naming_the_known_tasks(jq):
    @jq.task
    def known() -> None:
        pass

    jq.enqueue_task("nope", {}, id="unknown", max_attempts=5)
    jq.enqueue(b"raw", id="raw")
    stats = drain_tasks(jq)
    assert stats.completed == 0
    dead = {d.id: d for d in jq.dead_letters()}
    assert set(dead) == {"unknown", "raw"}
    assert dead["unknown"].attempts == 1, "not retried"
    assert dead["unknown"].last_error == 'unknown task "nope": this worker runs known (dead-lettered, not retried)'
    assert "no task name" in (dead["raw"].last_error or "")


def test_a_failing_task_is_retried_like_any_job(jq):
    calls: list[int] = []

    @jq.task
    def flaky(n: int) -> None:
        calls.append(n)
        if len(calls) < 2:
            raise ValueError("first time")

    flaky.enqueue(7)
    stats = drain_tasks(jq)
    assert (stats.failed, stats.completed, calls) == (1, 1, [7, 7])


def test_bad_task_registries_are_refused(jq):
    with pytest.raises(TypeError):
        jq.work_tasks({"x": "not callable"})  # type: ignore[dict-item]
    with pytest.raises(tideq.InvalidArgumentError):
        jq.work_tasks({})
    with pytest.raises(TypeError):
        jq.task(42)  # type: ignore[call-overload]


def test_async_tasks_enqueue_awaitables_and_run_on_the_loop(client, name):
    async def main() -> None:
        q = tideq.AsyncQueue(name, client)
        got: list[Any] = []

        @q.task
        async def greet(who: str) -> None:
            await asyncio.sleep(0)
            got.append(who)

        @q.task(name="sync-one")
        def sync_one(n: int) -> None:
            got.append(n)

        assert isinstance(greet, tideq.AsyncTask)
        job_id = await greet.enqueue("ada")
        assert isinstance(job_id, str)
        await sync_one.enqueue(5)
        await q.enqueue_task("greet", {"who": "bob"}, format="msgpack")
        stats = await q.run_tasks(poll_interval=0.1, stop_when_drained=True)
        assert stats.completed == 3
        assert sorted(map(str, got)) == ["5", "ada", "bob"]

    asyncio.run(main())


MYPY_SNIPPET = """
import tideq

q = tideq.Queue("q")
aq = tideq.AsyncQueue("q")

@q.task
def send(to: str, times: int = 1) -> bool:
    return True

@aq.task(name="asend", priority=2)
async def asend(to: str) -> None:
    pass

job_id: str = send.enqueue("ada", times=2)
ok: bool = send("ada")
send.enqueue_with(args=("x",), priority=1)

async def main() -> None:
    job: str = await asend.enqueue("bob")

send.enqueue(42)  # line 21: wrong argument type
send.enqueue("ada", nope=1)  # line 22: unknown keyword
"""


def test_mypy_checks_task_enqueue_arguments_against_the_function(tmp_path):
    path = tmp_path / "tasks_snippet.py"
    path.write_text(textwrap.dedent(MYPY_SNIPPET).lstrip("\n"))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context", "--no-incremental",
         "--cache-dir", os.devnull, str(path)],
        capture_output=True, text=True, timeout=300,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    lines = sorted(int(e.split(":")[1]) for e in errors)
    assert lines == [21, 22], out.stdout + out.stderr
    assert 'incompatible type "int"; expected "str"' in out.stdout
