"""The child process of ``tideq worker`` (``python -m tideq._worker``): its arguments, the targets
it resolves and the errors it ends on, run by hand (no supervisor) against a real redis-server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tideq
from tideq import _worker


def child(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
          timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m tideq._worker ARGS`` in ``tmp_path`` (where the test writes its modules)."""
    return subprocess.run([sys.executable, "-m", "tideq._worker", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def module(tmp_path: Path, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))


def resolved(value: Any) -> list[tuple[str, str]]:
    out = _worker.resolve(value, "target")
    assert isinstance(out, list)
    return [(s.name, "queue" if s.queue is not None else "handler" if s.handler else "tasks")
            for s in out]


# -- arguments --------------------------------------------------------------------------------

def test_an_unknown_flag_exits_2_with_a_message(tmp_path: Path) -> None:
    out = child(tmp_path, "mod:queue", "--no-such-flag")
    assert out.returncode == 2, out
    assert "tideq worker:" in out.stderr and "--no-such-flag" in out.stderr


@pytest.mark.parametrize("flag,value", [("--concurrency", "0"), ("--max-jobs", "x"),
                                        ("--shutdown-grace", "-1"), ("--queues", "a=0"),
                                        ("--queues", "a,a"), ("--log-format", "xml"),
                                        ("--log-level", "loud")])
def test_a_bad_flag_value_exits_2(tmp_path: Path, flag: str, value: str) -> None:
    out = child(tmp_path, "mod:queue", flag, value)
    assert out.returncode == 2, out
    assert flag in out.stderr or value in out.stderr, out.stderr


def test_the_queues_spec_takes_names_with_or_without_a_concurrency() -> None:
    args = _worker.parse_args(["m:q", "--queues", "emails=2, reports=1,audit", "--supervised"])
    assert args.queues == [("emails", 2), ("reports", 1), ("audit", None)]
    assert args.supervised


# -- bad targets --------------------------------------------------------------------------------

def test_a_missing_module_exits_1_with_one_line(tmp_path: Path) -> None:
    out = child(tmp_path, "nowhere.tasks:queue")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f'tideq worker: no module named "nowhere" (importing nowhere.tasks from {tmp_path})']


def test_a_missing_attribute_exits_1_naming_it(tmp_path: Path) -> None:
    module(tmp_path, "plain", "x = 1\n")
    out = child(tmp_path, "plain:queue")
    assert out.returncode == 1
    assert out.stderr.strip() == 'tideq worker: plain has no attribute "queue"'


def test_a_module_with_a_syntax_error_exits_1_with_the_error(tmp_path: Path) -> None:
    module(tmp_path, "broken", "def f(:\n    pass\n")
    out = child(tmp_path, "broken:queue")
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("tideq worker: broken failed to import: SyntaxError:"), out.stderr
    assert "broken.py, line 1" in last


def test_a_module_whose_import_fails_exits_1_with_its_traceback(tmp_path: Path) -> None:
    module(tmp_path, "importer", "import no_such_dependency_here\n")
    out = child(tmp_path, "importer")
    assert out.returncode == 1
    assert "Traceback" in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "tideq worker: importer failed to import: ModuleNotFoundError: No module named "
        "'no_such_dependency_here'")


def test_a_target_of_the_wrong_kind_exits_1_saying_what_it_takes(tmp_path: Path) -> None:
    module(tmp_path, "wrong", "queue = 42\n")
    out = child(tmp_path, "wrong:queue")
    assert out.returncode == 1
    assert out.stderr.strip().startswith("tideq worker: wrong:queue is a int: expected a Queue")


def test_a_queue_without_tasks_exits_1(tmp_path: Path, redis_url: str) -> None:
    module(tmp_path, "notasks", f"import tideq\nqueue = tideq.Queue('nt', url={redis_url!r})\n")
    out = child(tmp_path, "notasks:queue")
    assert out.returncode == 1
    assert 'queue "nt" has no tasks' in out.stderr


def test_a_module_without_queues_exits_1(tmp_path: Path) -> None:
    module(tmp_path, "empty", "x = 1\n")
    out = child(tmp_path, "empty")
    assert out.returncode == 1
    assert out.stderr.strip() == ("tideq worker: empty has no Queue with tasks (a Queue or "
                                  "AsyncQueue whose functions are decorated with @queue.task)")


def test_a_factory_that_raises_exits_1_with_its_error(tmp_path: Path) -> None:
    module(tmp_path, "factory", "def make():\n    raise RuntimeError('no config')\n")
    out = child(tmp_path, "factory:make")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "tideq worker: factory:make() raised RuntimeError: no config")


def test_a_queue_the_target_lacks_exits_1_naming_the_known_ones(tmp_path: Path) -> None:
    module(tmp_path, "two", "handlers = {'emails': lambda job: None, 'reports': lambda job: None}\n")
    out = child(tmp_path, "two:handlers", "--queues", "emails=1,audit=2")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'tideq worker: two:handlers has no queue "audit" (its queues: emails, reports)')


@pytest.mark.parametrize("value,error", [
    ({}, "target is an empty mapping"),
    ({"a": 3}, 'target["a"] is a int'),
    ({"a": {}}, 'target["a"] is an empty mapping'),
    ({"a": {"t": 1}}, "'t' is not a task name with a function"),
    ({1: print}, "the key 1 is not a queue name"),
])
def test_a_bad_mapping_is_refused_naming_the_entry(value: Any, error: str) -> None:
    with pytest.raises(_worker.TargetError, match=None) as e:
        _worker.resolve(value, "target")
    assert error in str(e.value)


# -- what targets resolve to -------------------------------------------------------------------

def test_targets_resolve_to_their_queues(client: tideq.Client, name: str) -> None:
    q = tideq.Queue(name, client)

    @q.task
    def add(a: int, b: int) -> int:
        return a + b

    other = tideq.Queue(name + "-other", client)
    assert resolved(q) == [(name, "queue")]
    assert resolved({"emails": lambda job: None, "reports": {"r": print}, name: q}) == [
        ("emails", "handler"), ("reports", "tasks"), (name, "queue")]
    assert resolved(lambda: q) == [(name, "queue")]
    assert resolved(lambda: lambda: {"x": print}) == [("x", "handler")]
    with pytest.raises(_worker.TargetError, match='the key "x" names Queue'):
        _worker.resolve({"x": q}, "target")
    with pytest.raises(_worker.TargetError, match="has no tasks"):
        _worker.resolve(other, "target")


def test_an_async_factory_resolves_to_an_awaitable(client: tideq.Client, name: str) -> None:
    async def make() -> dict[str, Any]:
        return {name: print}

    out = _worker.resolve(make, "target")
    assert not isinstance(out, list)
    out.close()  # type: ignore[union-attr]


def test_async_handlers_want_an_event_loop(client: tideq.Client, name: str) -> None:
    async def handler(job: Any) -> None:
        pass

    served = _worker.resolve({"a": handler, "b": print, "c": {"t": handler}}, "target")
    assert isinstance(served, list)
    assert [s.is_async() for s in served] == [True, False, True]
    aq = tideq.AsyncQueue(name, client)
    aq.task(handler)
    assert _worker.resolve(aq, "t")[0].is_async()  # type: ignore[index]


# -- serving (by hand, with --max-jobs so the process ends by itself) --------------------------

SERVED = """
import asyncio, os, tideq
url = os.environ["TIDEQ_REDIS_URL"]
name = os.environ["TQ_QUEUE"]
out = os.environ["TQ_OUT"]

def note(text):
    with open(out, "a") as f:
        f.write(text + "\\n")

queue = tideq.Queue(name + "-sync", url=url)

@queue.task
def add(a, b):
    note(f"sync {a + b}")

aqueue = tideq.AsyncQueue(name + "-async", url=url)

@aqueue.task
async def mul(a, b):
    await asyncio.sleep(0)
    note(f"async {a * b} {asyncio.get_running_loop() is not None}")

def on_job(job):
    note(f"handler {job.payload.decode()}")

handlers = {name + "-plain": on_job, name + "-named": {"sub": lambda a, b: note(f"named {a - b}")}}

async def make():
    await asyncio.sleep(0)
    return {name + "-plain": on_job}
"""


@pytest.fixture
def served(tmp_path: Path, redis_url: str, name: str) -> dict[str, str]:
    module(tmp_path, "served", SERVED)
    return {"TIDEQ_REDIS_URL": redis_url, "TQ_QUEUE": name, "TQ_OUT": str(tmp_path / "out")}


def lines(tmp_path: Path) -> list[str]:
    return sorted((tmp_path / "out").read_text().splitlines())


def test_a_queue_target_serves_its_tasks_until_max_jobs(tmp_path: Path, served: dict[str, str],
                                                        redis_url: str, name: str) -> None:
    q = tideq.Queue(name + "-sync", url=redis_url)
    for i in range(5):
        q.enqueue_task("add", {"a": i, "b": 1})
    out = child(tmp_path, "served:queue", "--max-jobs", "3", "--concurrency", "1", env=served)
    assert out.returncode == 0, out.stderr
    assert lines(tmp_path) == ["sync 1", "sync 2", "sync 3"]
    assert q.stats().ready == 2


def test_an_async_queue_target_runs_its_tasks_on_an_event_loop(
        tmp_path: Path, served: dict[str, str], redis_url: str, name: str) -> None:
    q = tideq.Queue(name + "-async", url=redis_url)
    for i in range(3):
        q.enqueue_task("mul", {"a": i, "b": 2})
    out = child(tmp_path, "served:aqueue", "--max-jobs", "3", env=served)
    assert out.returncode == 0, out.stderr
    assert lines(tmp_path) == ["async 0 True", "async 2 True", "async 4 True"]


def test_a_mapping_opens_its_queues_by_name_on_the_url_and_serves_the_selected_ones(
        tmp_path: Path, served: dict[str, str], redis_url: str, name: str) -> None:
    plain = tideq.Queue(name + "-plain", url=redis_url)
    named = tideq.Queue(name + "-named", url=redis_url)
    plain.enqueue(b"p1")
    named.enqueue_task("sub", {"a": 5, "b": 2})
    env = {**served, "TIDEQ_REDIS_URL": "redis://127.0.0.1:1"}  # --url wins
    out = child(tmp_path, "served:handlers", "--url", redis_url, "--max-jobs", "2",
                "--queues", f"{name}-plain=1,{name}-named=1", env=env)
    assert out.returncode == 0, out.stderr
    assert lines(tmp_path) == ["handler p1", "named 3"]


def test_an_async_factory_is_awaited_and_its_result_served(
        tmp_path: Path, served: dict[str, str], redis_url: str, name: str) -> None:
    tideq.Queue(name + "-plain", url=redis_url).enqueue(b"from-factory")
    out = child(tmp_path, "served:make", "--max-jobs", "1", "--log-format", "json",
                "--log-level", "warn", env=served)
    assert out.returncode == 0, out.stderr
    assert lines(tmp_path) == ["handler from-factory"]


def test_a_module_target_serves_every_queue_with_tasks(
        tmp_path: Path, served: dict[str, str], redis_url: str, name: str) -> None:
    tideq.Queue(name + "-sync", url=redis_url).enqueue_task("add", {"a": 1, "b": 1})
    tideq.Queue(name + "-async", url=redis_url).enqueue_task("mul", {"a": 3, "b": 3})
    out = child(tmp_path, "served", "--max-jobs", "2", env=served)
    assert out.returncode == 0, out.stderr
    assert lines(tmp_path) == ["async 9 True", "sync 2"]
