"""The test modes from Python (issue 42 item 1): ``tideq.testing.fake()`` records what
unchanged application code enqueues (the real validation and encoding, no connection),
``drain()`` runs it with the ``@queue.task`` functions through the worker's code, ``inline()`` runs
it at once; ``get``/``wait`` answer from the record, other operations raise NotSupportedError;
the same scenario ends the same inline, fake-drained and on a real worker; and the pytest plugin's
fixtures work in a project of their own."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from typing import Any

import pytest

import testing_app
import tideq
import tideq.testing


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:10]}"


def offline(name: str, **options: Any) -> tideq.Queue:
    """A queue whose URL is a closed port: any connection would fail."""
    return tideq.Queue(unique(name), url="redis://127.0.0.1:1", **options)


def test_fake_mode_records_what_unchanged_app_code_enqueues_without_connecting():
    with tideq.testing.fake() as fake:
        job_id = testing_app.signup("ada@example.com")
        job = fake.assert_enqueued(task="create_account", args={"email": "ada@example.com"})
        assert job.id == job_id and job.queue == "testing-app-signups"
        assert (job.state, job.attempts, job.max_attempts) == ("enqueued", 0, 3)
        assert job.payload == b'{"email":"ada@example.com"}', "the real JSON encoding"
        assert fake.assert_enqueued(task=testing_app.create_account, queue=testing_app.queue) == job
        assert fake.enqueued(queue="testing-app-mail") == []
        info = testing_app.queue.get(job_id)
        assert info is not None and info.state == "ready" and info.task == "create_account"
    assert not testing_app.sent


def test_fake_mode_records_options_and_filters_by_them():
    q = offline("opts")
    with tideq.testing.fake() as fake:
        q.enqueue_task("later", {"n": 1}, delay=90, group="tenant-1", priority=5)
        q.enqueue_task("later", [1, 2], format="msgpack")
        q.enqueue(b"raw")
        (job,) = fake.jobs(delay=90)
        assert (job.delay, job.group, job.priority, job.args) == (90.0, "tenant-1", 5, {"n": 1})
        assert fake.jobs(args=[1, 2])[0].task == "later"
        assert fake.jobs(group="tenant-1", priority=4) == []
        raw = fake.jobs(queue=q)[2]
        assert (raw.task, raw.args, raw.payload) == (None, None, b"raw")
        fake.clear()
        assert fake.jobs() == []


def test_assert_enqueued_raises_assertion_error_saying_what_was_recorded():
    with tideq.testing.fake() as fake:
        with pytest.raises(AssertionError) as e:
            fake.assert_enqueued(task="create_account")
        assert str(e.value) == (
            'expected a job with task "create_account" to be enqueued, but no job was enqueued'
        )
        testing_app.signup("bob@example.com")
        with pytest.raises(AssertionError) as e:
            fake.assert_enqueued(task="create_account", args={"email": "eve@example.com"})
        msg = str(e.value)
        assert msg.startswith(
            'expected a job with task "create_account", args {"email": "eve@example.com"} to be '
            "enqueued, but the 1 job(s) enqueued were:\n"
        ), msg
        assert 'task "create_account" args {"email": "bob@example.com"}' in msg


def test_bad_input_raises_in_fake_mode_and_records_nothing():
    q = offline("bad")
    with tideq.testing.fake() as fake:
        with pytest.raises(tideq.InvalidArgumentError):
            q.enqueue_task("t", {}, priority=0)
        with pytest.raises(tideq.InvalidArgumentError):
            q.enqueue_many([(b"ok", {}), (b"bad", {"max_attempts": 0})])
        with pytest.raises(TypeError):
            q.enqueue_task("t", {"x": object()})
        assert fake.jobs() == []


def test_drain_runs_registered_tasks_and_what_they_enqueue():
    testing_app.sent.clear()
    with tideq.testing.fake() as fake:
        job_id = testing_app.signup("ada@example.com")
        report = fake.drain()
        assert (report.ran, report.completed, report.dead, report.left) == (2, 2, 0, 0)
        assert testing_app.sent == ["ada@example.com"]
        assert fake.jobs(id=job_id)[0].result == {"account": "ada"}
        welcome = fake.assert_enqueued(task="send_welcome", args={"to": "ada@example.com"})
        assert (welcome.state, welcome.result) == ("completed", "welcomed ada@example.com")
        assert testing_app.queue.wait(job_id) == {"account": "ada"}, "wait answers from the record"


def test_drain_retries_to_the_limit_then_dead_with_the_worker_error_text():
    q = offline("retries")
    calls: list[int] = []

    def flaky(job: tideq.Job) -> str:
        calls.append(job.attempt)
        raise RuntimeError(f"attempt {job.attempt}")

    def refuse(n: int) -> None:
        raise tideq.DontRetry("card declined")

    with tideq.testing.fake() as fake:
        a = q.enqueue(b"x", max_attempts=3).id
        b = offline("refusals").enqueue_task("refuse", 1).id
        report = fake.drain({q.name: flaky, fake.jobs(id=b)[0].queue: {"refuse": refuse}})
        assert (report.ran, report.dead) == (4, 2)
        job = fake.jobs(id=a)[0]
        assert (job.state, job.attempts, calls) == ("dead", 3, [1, 2, 3])
        assert job.errors == ["RuntimeError: attempt 1", "RuntimeError: attempt 2",
                              "RuntimeError: attempt 3"]
        refused = fake.jobs(id=b)[0]
        assert (refused.state, refused.attempts, refused.error) == (
            "dead", 1, "DontRetry: card declined")
        with pytest.raises(tideq.JobFailedError, match="went to the dead letters: RuntimeError"):
            q.wait(a)


def test_a_queue_without_handlers_is_left_recorded():
    with tideq.testing.fake() as fake:
        offline("nobody").enqueue(b"x")
        report = fake.drain()
        assert (report.ran, report.left) == (0, 1)
        assert len(fake.enqueued()) == 1


def test_drain_async_runs_async_def_tasks_on_the_running_loop():
    q = tideq.AsyncQueue(unique("async-tasks"), url="redis://127.0.0.1:1")
    loops: list[Any] = []

    @q.task
    async def notify(user: str) -> str:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return f"notified {user}"

    async def main() -> None:
        with tideq.testing.fake() as fake:
            job_id = await notify.enqueue("ada")
            report = await fake.drain_async()
            assert report.completed == 1
            assert loops == [asyncio.get_running_loop()]
            assert await q.wait(job_id) == "notified ada"

    asyncio.run(main())


def test_inline_mode_runs_the_task_in_the_enqueue_and_raises_its_failure():
    testing_app.sent.clear()
    with tideq.testing.inline() as mode:
        job_id = testing_app.signup("ada@example.com")
        assert testing_app.sent == ["ada@example.com"], "ran at once, with what it enqueued"
        info = testing_app.queue.get(job_id)
        assert info is not None and (info.state, info.result) == ("completed", {"account": "ada"})
        with pytest.raises(tideq.JobFailedError, match="ValueError: not an email address"):
            testing_app.signup("not-an-address")
        dead = mode.jobs(args={"email": "not-an-address"})[0]
        assert (dead.state, dead.attempts) == ("dead", 3)
    with tideq.testing.inline(raise_errors=False) as mode:
        testing_app.signup("still-not-an-address")
        assert mode.jobs()[0].state == "dead"


def test_other_operations_raise_not_supported_and_a_second_mode_is_refused():
    q = offline("refused")
    with tideq.testing.fake():
        for call in (q.stats, lambda: q.cancel("x"), lambda: q.jobs("ready"),
                     lambda: q.upsert_schedule("s", b"x", every=60),
                     lambda: q.enqueue_flow(tideq.FlowJob(b"p"))):
            with pytest.raises(tideq.NotSupportedError, match="real Redis"):
                call()
        with pytest.raises(tideq.NotSupportedError):
            q.work(lambda job: None)
        with pytest.raises(tideq.InvalidArgumentError, match="already on"):
            tideq.testing.inline()


def test_stop_returns_to_real_redis(redis_url):
    q = tideq.Queue(unique("after"), url=redis_url)
    mode = tideq.testing.fake()
    q.enqueue(b"recorded")
    mode.stop()
    mode.stop()
    q.enqueue(b"sent")
    assert q.stats().ready == 1
    assert len(mode.jobs()) == 1, "the record stays readable"


# The agreement scenario: a task succeeding with a result, one failing twice then succeeding, one
# failing to its limit (3 attempts), one raising DontRetry.
def _add(a: int, b: int) -> dict[str, int]:
    return {"sum": a + b}


def _flaky(job: tideq.Job) -> str:
    if job.attempt < 3:
        raise RuntimeError(f"flaky attempt {job.attempt}")
    return f"done at attempt {job.attempt}"


def _doomed(n: int) -> None:
    raise ValueError("doomed")


def _refuse(n: int) -> None:
    raise tideq.DontRetry("card declined: retrying cannot help")


def _scenario(q: tideq.Queue) -> list[str]:
    ids = [q.enqueue_task("add", {"a": 2, "b": 3}).id,
           q.enqueue_task("flaky", None).id,
           q.enqueue_task("doomed", 1, max_attempts=3).id,
           q.enqueue_task("refuse", 1).id]
    return ids


def _endings(q: tideq.Queue, ids: list[str]) -> list[tuple[Any, ...]]:
    out = []
    for i in ids:
        info = q.get(i)
        assert info is not None
        out.append((info.state, info.attempts, info.result, info.last_error))
    return out


def test_the_same_tasks_end_the_same_inline_fake_drained_and_on_a_real_worker(redis_url):
    # ``flaky`` reads its attempt from the job: a raw handler wrapping the task dispatch.
    tasks: dict[str, Any] = {"add": _add, "doomed": _doomed, "refuse": _refuse}

    def handlers(q: tideq.Queue) -> dict[str, Any]:
        by_name = dict(tasks)

        def run(job: tideq.Job) -> Any:
            if job.task == "flaky":
                return _flaky(job)
            args = job.args()
            fn = by_name[str(job.task)]
            return fn(**args) if isinstance(args, dict) else fn(args)

        return {q.name: run}

    fast = tideq.Backoff.fixed(0.01)
    q = tideq.Queue(unique("agree-inline"), url=redis_url, backoff=fast)
    with tideq.testing.inline(handlers(q), raise_errors=False):
        inline_end = _endings(q, _scenario(q))
    q = tideq.Queue(unique("agree-fake"), url=redis_url, backoff=fast)
    with tideq.testing.fake() as fake:
        ids = _scenario(q)
        fake.drain(handlers(q))
        fake_end = _endings(q, ids)
    q = tideq.Queue(unique("agree-real"), url=redis_url, backoff=fast)
    ids = _scenario(q)
    q.work(handlers(q)[q.name], poll_interval=0.05, stop_when_drained=True).join()
    real_end = _endings(q, ids)

    assert real_end[0] == ("completed", 1, {"sum": 5}, None)
    assert real_end[1][:3] == ("completed", 3, "done at attempt 3")
    assert real_end[2] == ("dead", 3, None, "ValueError: doomed")
    assert real_end[3] == ("dead", 1, None, "DontRetry: card declined: retrying cannot help")
    assert inline_end == real_end
    assert fake_end == real_end


PLUGIN_TEST = '''
import tideq

def test_fake(tideq_fake):
    q = tideq.Queue("anything", url="redis://127.0.0.1:1")
    q.enqueue_task("hello", {"to": "ada"})
    assert tideq_fake.assert_enqueued(task="hello", args={"to": "ada"}).state == "enqueued"

def test_inline(tideq_inline):
    q = tideq.Queue("inline-plugin", url="redis://127.0.0.1:1")

    @q.task
    def double(n):
        return n * 2

    job_id = double.enqueue(21)
    assert q.get(job_id).result == 42

def test_real(tideq_redis, tideq_queue):
    assert tideq_redis.startswith("redis://127.0.0.1:")
    a, b = tideq_queue("emails"), tideq_queue("emails")
    assert a.name != b.name and a.name.startswith("emails-")
    a.enqueue(b"x")
    assert a.stats().ready == 1 and b.stats().ready == 0
'''


def _pytest(tmp_path: Any, source: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_plugin_use.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plugin_use.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )


def test_the_pytest_plugin_fixtures_work_in_a_project_of_their_own(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TIDEQ_TEST_REDIS_URL"}
    run = _pytest(tmp_path, PLUGIN_TEST, env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout


def test_tideq_redis_says_redis_server_is_missing_from_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TIDEQ_TEST_REDIS_URL"}
    env["PATH"] = str(tmp_path)
    run = _pytest(tmp_path, "def test_needs_redis(tideq_redis):\n    pass\n", env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "no `redis-server` is on PATH" in run.stdout, run.stdout
