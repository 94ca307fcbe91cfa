"""The job queue's producer side and admin calls (blocking and asyncio APIs): one test per promise
of the core contract (core/tests/jobs.rs), checked across the Python/Rust crossing."""

from __future__ import annotations

import asyncio
import builtins
import datetime
import inspect
import json
import logging
import pathlib
import threading

import pytest

import tideq
from resp import command, keys, server_ms
from tideq_harness import free_port, wait_for

VECTORS = pathlib.Path(__file__).resolve().parents[1] / "vectors" / "envelope_v1.json"
FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture
def jq(client: tideq.Client, name: str) -> tideq.Queue:
    return tideq.Queue(name, client, backoff=FAST)


def drain(q: tideq.Queue, handler) -> tideq.WorkerStats:  # type: ignore[no-untyped-def]
    return q.run(handler, poll_interval=0.1, stop_when_drained=True)


def test_enqueue_returns_the_id_and_an_existing_id_creates_nothing(jq):
    first = jq.enqueue(b"one", id="order-1")
    assert (first.id, first.created) == ("order-1", True)
    again = jq.enqueue(b"two", id="order-1", delay=60.0, max_attempts=9)
    assert (again.id, again.created) == ("order-1", False)
    info = jq.get("order-1")
    assert info is not None
    assert (info.payload, info.state, info.max_attempts) == (b"one", "ready", 5), "the existing job changed"
    generated = jq.enqueue(bytearray(b"x"))
    assert generated.created and len(generated.id) == 32
    s = jq.stats()
    assert (s.ready, s.delayed, s.enqueued) == (2, 0, 2)
    assert repr(first) == "Enqueued(id='order-1', created=True)"
    assert jq.enqueue(b"three", id="order-1") == again


def test_enqueue_many_takes_payloads_and_payload_option_pairs_in_order(jq):
    done = jq.enqueue_many(
        [
            b"a",
            memoryview(b"b"),
            (b"c", {"id": "c", "delay": 60.0}),
            (bytearray(b"d"), {"id": "d", "max_attempts": 2, "backoff": FAST, "timeout": 5.0}),
            (b"dup", {"id": "c"}),
            (b"none-options", {"id": None, "delay": None}),
        ]
    )
    assert [d.created for d in done] == [True, True, True, True, False, True]
    assert done[2].id == "c" and done[4].id == "c" and done[3].id == "d"
    c, d = jq.get("c"), jq.get("d")
    assert c is not None and d is not None
    assert (c.state, c.payload) == ("delayed", b"c")
    assert (d.state, d.max_attempts) == ("ready", 2)
    jq.cancel("c")  # a delayed job would keep a draining worker waiting
    order: list[bytes] = []
    jq.run(lambda job: order.append(job.payload), concurrency=1, poll_interval=0.1, stop_when_drained=True)
    assert order == [b"a", b"b", b"d", b"none-options"], "FIFO"
    with pytest.raises(TypeError, match="unknown enqueue option 'dealy'"):
        jq.enqueue_many([(b"x", {"dealy": 1.0})])
    with pytest.raises(TypeError, match="payload"):
        jq.enqueue_many([(b"x",)])


def test_async_methods_return_coroutines_that_run_only_when_awaited(client, name):
    aq = tideq.AsyncQueue(name, client)
    pending = aq.enqueue(b"x", id="lazy")
    assert inspect.iscoroutine(pending)
    # Like any coroutine, it does nothing until awaited (here: closed unawaited).
    pending.close()
    assert asyncio.run(aq.stats()).ready == 0  # asyncio.run takes it directly

    async def main() -> None:
        task = asyncio.create_task(aq.enqueue(b"x", id="task"))
        assert (await task).created
        assert (await aq.get("task")) is not None

    asyncio.run(main())
    assert asyncio.run(aq.stats()).ready == 1


def test_get_reports_state_attempts_and_redis_clock_times_or_none(jq, redis_url):
    before = server_ms(redis_url)
    jq.enqueue(b"x", id="later", delay=30.0)
    after = server_ms(redis_url)
    info = jq.get("later")
    assert info is not None
    assert info.state == "delayed" and info.attempts == 0 and info.last_error is None
    assert before <= round(info.enqueued_at * 1000) <= after
    assert info.state_since_or_until is not None
    assert before + 30_000 <= round(info.state_since_or_until * 1000) <= after + 30_000
    assert "state='delayed'" in repr(info)
    assert jq.get("never-enqueued") is None


@pytest.mark.parametrize("how", ["delay", "run_at_epoch", "run_at_datetime"])
def test_a_delayed_job_never_runs_before_its_due_time_by_redis_time(jq, redis_url, how):
    now = server_ms(redis_url) / 1000
    if how == "delay":
        jq.enqueue(b"x", id="due", delay=0.3)
    elif how == "run_at_epoch":
        jq.enqueue(b"x", id="due", run_at=now + 0.3)
    else:
        when = datetime.datetime.fromtimestamp(now + 0.3, tz=datetime.timezone.utc)
        jq.enqueue(b"x", id="due", run_at=when)
    info = jq.get("due")
    assert info is not None and info.state == "delayed" and info.state_since_or_until is not None
    due_ms = round(info.state_since_or_until * 1000)
    ran: list[int] = []
    drain(jq, lambda job: ran.append(server_ms(redis_url)))
    assert len(ran) == 1
    assert ran[0] >= due_ms, f"ran {due_ms - ran[0]} ms early"
    assert ran[0] - due_ms < 1000, "promoted far too late"


def test_run_at_takes_naive_local_and_aware_datetimes_and_epoch_seconds(jq):
    t = 4_000_000_000.25  # in 2096: stays delayed
    naive_local = datetime.datetime.fromtimestamp(t)
    aware = datetime.datetime.fromtimestamp(t, tz=datetime.timezone(datetime.timedelta(hours=-7)))
    for i, (when, expected) in enumerate([(t, t), (int(t), int(t)), (naive_local, t), (aware, t)]):
        jq.enqueue(b"x", id=f"j{i}", run_at=when)
        info = jq.get(f"j{i}")
        assert info is not None and info.state_since_or_until is not None
        assert abs(info.state_since_or_until - expected) < 0.002, when
    with pytest.raises(TypeError, match="run_at must be a datetime or epoch seconds"):
        jq.enqueue(b"x", run_at="tomorrow")  # type: ignore[arg-type]


def test_cancel_removes_delayed_and_ready_jobs(jq):
    jq.enqueue(b"r", id="ready")
    jq.enqueue(b"d", id="delayed", delay=60.0)
    jq.cancel("ready")
    jq.cancel("delayed")
    assert jq.get("ready") is None and jq.get("delayed") is None
    s = jq.stats()
    assert (s.ready, s.delayed, s.cancelled) == (0, 0, 2)


def test_cancel_of_a_completed_job_is_job_not_cancellable_error(jq):
    # (A running job is asked to stop instead: test_worker_shutdown.py.)
    jq.enqueue(b"a", id="busy")
    jq.run(lambda job: None, poll_interval=0.1, stop_when_drained=True)
    info = jq.get("busy")
    assert info is not None and info.state == "completed"
    with pytest.raises(tideq.JobNotCancellableError) as err:
        jq.cancel("busy")
    assert err.value.code == "JOB_NOT_CANCELLABLE" and "completed" in str(err.value)


def test_an_unknown_id_is_job_not_found_error(jq):
    with pytest.raises(tideq.JobNotFoundError) as err:
        jq.cancel("nope")
    assert err.value.code == "JOB_NOT_FOUND" and isinstance(err.value, LookupError)
    with pytest.raises(tideq.JobNotFoundError):
        jq.requeue("nope")


def test_a_failing_job_is_dead_lettered_after_exactly_max_attempts_with_its_last_error(jq, caplog):
    caplog.set_level(logging.ERROR, logger="tideq")
    jq.enqueue(b"x", id="flaky", max_attempts=3)
    attempts: list[int] = []

    def handler(job: tideq.Job) -> None:
        attempts.append(job.attempt)
        raise ValueError(f"boom {job.attempt}")

    stats = drain(jq, handler)
    assert attempts == [1, 2, 3]
    assert (stats.failed, stats.completed) == (3, 0)
    info = jq.get("flaky")
    assert info is not None
    assert (info.state, info.attempts, info.last_error) == ("dead", 3, "ValueError: boom 3")
    s = jq.stats()
    assert (s.dead, s.dead_lettered, s.retried) == (1, 1, 2)
    records = [r for r in caplog.records if r.name == "tideq" and r.levelno == logging.ERROR]
    assert len(records) == 3
    assert all(r.exc_info and r.exc_info[0] is ValueError for r in records)
    assert "'flaky'" in records[2].getMessage() and "attempt 3 of 3" in records[2].getMessage()
    assert "Traceback" in caplog.text


def test_an_exception_without_message_is_stored_as_its_type_name(jq):
    class Custom(Exception):
        pass

    def handler(job: tideq.Job) -> None:
        raise Custom()

    jq.enqueue(b"x", id="bare", max_attempts=1)
    drain(jq, handler)
    info = jq.get("bare")
    assert info is not None and info.last_error == "Custom"


def test_dead_letters_can_be_listed_requeued_and_purged(jq, redis_url, name):
    jq.enqueue_many([(b"%d" % i, {"id": f"bad{i}", "max_attempts": 1}) for i in range(5)])

    def nope(job: tideq.Job) -> None:
        raise RuntimeError("nope")

    drain(jq, nope)
    dead = jq.dead_letters()
    assert sorted(d.id for d in dead) == [f"bad{i}" for i in range(5)]
    assert all(d.state == "dead" and d.last_error == "RuntimeError: nope" for d in dead)
    assert len(jq.dead_letters(offset=3, limit=10)) == 2 and len(jq.dead_letters(limit=2)) == 2
    assert jq.dead_letters(limit=0) == []
    jq.requeue("bad0")
    with pytest.raises(tideq.JobNotFoundError):
        jq.requeue("bad0")
    info = jq.get("bad0")
    assert info is not None and (info.state, info.attempts) == ("ready", 0)
    assert jq.requeue_all() == 4
    drain(jq, nope)
    assert jq.purge() == 5
    s = jq.stats()
    assert (s.dead, s.ready, s.delayed, s.active) == (0, 0, 0, 0)
    assert command(redis_url, "HLEN", f"tideq:{{{name}}}:jobs") == 0


def test_stats_count_jobs_per_state_and_lifetime_counters(jq):
    jq.enqueue_many([b"1", b"2", (b"3", {"delay": 60.0}), (b"4", {"id": "c"})])
    jq.cancel("c")
    s = jq.stats()
    assert (s.ready, s.delayed, s.active, s.dead) == (2, 1, 0, 0)
    assert (s.enqueued, s.cancelled, s.completed) == (4, 1, 0)
    # A delayed job stays, so a worker would not drain: stop it once both ready jobs are done.
    handled = threading.Semaphore(0)
    w = jq.work(lambda job: handled.release(), poll_interval=0.1)
    try:
        assert handled.acquire(timeout=5) and handled.acquire(timeout=5)
    finally:
        w.shutdown()
    s = jq.stats()
    assert (s.completed, s.ready, s.delayed, s.recovered, s.dead_lettered, s.retried) == (2, 0, 1, 0, 0, 0)
    assert repr(s).startswith(
        "JobStats(delayed=1, ready=0, active=0, dead=0, completed_kept=2, waiting=0, enqueued=4, completed=2"
    )


def test_bad_job_input_is_rejected_and_nothing_written(redis_url, name):
    client = tideq.Client(redis_url, max_payload=100)
    bad_queue_options = [
        {"max_attempts": 0},
        {"max_attempts": -1},
        {"backoff": tideq.Backoff.exponential(base=10.0, max=1.0)},
        {"timeout": 0.0},
        {"keep_for": -1.0},
    ]
    for opts in bad_queue_options:
        with pytest.raises(tideq.InvalidArgumentError):
            tideq.Queue(name, client, **opts)  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Queue("bad{name}", client)
    q = tideq.Queue(name, client)
    invalid = [
        {"delay": -1.0},
        {"max_attempts": 0},
        {"max_attempts": -3},
        {"timeout": 0.0},
        {"delay": 1.0, "run_at": 4_000_000_000.0},
        {"run_at": -5.0},
        {"id": ""},
        {"id": "tab\there"},
        {"id": "nl\n"},
        {"id": "x" * 257},
        {"backoff": tideq.Backoff.exponential(base=10.0, max=1.0)},
    ]
    for opts in invalid:
        with pytest.raises(tideq.InvalidArgumentError) as err:
            q.enqueue(b"x", **opts)  # type: ignore[arg-type]
        assert err.value.code == "INVALID_ARGUMENT" and isinstance(err.value, ValueError), opts
    for bad_id in ["", "tab\t", "x" * 257]:
        for call in (q.get, q.cancel, q.requeue):
            with pytest.raises(tideq.InvalidArgumentError):
                call(bad_id)
    with pytest.raises(tideq.PayloadTooLargeError) as too_large:
        q.enqueue(b"x" * 101)
    assert too_large.value.code == "PAYLOAD_TOO_LARGE" and "101" in str(too_large.value)
    assert "max_payload option" in str(too_large.value), "names the option that raises the limit"
    for payload in ["text", 42, None, [1, 2]]:
        with pytest.raises(TypeError, match="payload must be bytes"):
            q.enqueue(payload)  # type: ignore[arg-type]
    with pytest.raises(tideq.PayloadTooLargeError):
        q.enqueue_many([(b"fine", {"id": "fine"}), b"x" * 101])
    with pytest.raises(TypeError):
        q.enqueue_many([b"fine", "not bytes"])  # type: ignore[list-item]
    with pytest.raises(tideq.InvalidArgumentError):
        q.enqueue_many([b"fine", (b"x", {"delay": -1.0})])
    with pytest.raises(tideq.InvalidArgumentError):
        tideq.Backoff.fixed(-1.0)
    assert keys(redis_url, f"*{name}*") == []
    # The limits themselves are accepted.
    assert q.enqueue(b"x" * 100, id="x" * 256, max_attempts=1, delay=0.0).created


def test_enqueue_with_redis_unreachable_is_a_connection_error(name):
    q = tideq.Queue(name, url=f"redis://:s3cret@127.0.0.1:{free_port()}")
    with pytest.raises(tideq.ConnectionError) as err:
        q.enqueue(b"x")
    assert err.value.code == "CONNECTION" and isinstance(err.value, builtins.ConnectionError)
    assert "s3cret" not in str(err.value) and "s3cret" not in repr(q)


def test_error_classes_of_the_job_queue_carry_codes():
    table = {
        tideq.JobNotFoundError: ("JOB_NOT_FOUND", LookupError),
        tideq.JobNotCancellableError: ("JOB_NOT_CANCELLABLE", Exception),
        tideq.LeaseLostError: ("LEASE_LOST", Exception),
    }
    for cls, (code, also) in table.items():
        assert issubclass(cls, tideq.TideqError) and issubclass(cls, also)
        assert cls.code == code and cls.__module__ == "tideq"


def test_backoff_policies_convert_seconds_and_compare():
    fixed = tideq.Backoff.fixed(0.25)
    assert (fixed.kind, fixed.base, fixed.max, fixed.jitter) == ("fixed", 0.25, 0.25, False)
    exp = tideq.Backoff.exponential()
    assert (exp.kind, exp.base, exp.max, exp.jitter) == ("exponential", 1.0, 3600.0, True)
    assert tideq.Backoff.exponential(base=0.5, max=60.0, jitter=False) == tideq.Backoff.exponential(0.5, 60.0, False)
    assert fixed != exp
    assert repr(fixed) == "Backoff.fixed(0.25)"
    assert repr(exp) == "Backoff.exponential(base=1.0, max=3600.0, jitter=True)"


def vector_fields(v: dict) -> dict:
    fields = dict(v["fields"])
    fields["payload"] = bytes.fromhex(fields.pop("payload_hex"))
    return fields


def test_envelope_vectors_decode_and_encode_byte_for_byte():
    doc = json.loads(VECTORS.read_text())
    vectors = doc["vectors"]
    assert len(vectors) >= 4 and any("trace" in v["fields"] for v in vectors)
    for v in vectors:
        raw = bytes.fromhex(v["hex"])
        fields = vector_fields(v)
        assert tideq.decode_envelope(raw) == fields, v["name"]
        assert tideq.encode_envelope(fields) == raw, v["name"]
    # Envelopes of a later version, with fields this one does not know: decoded to the fields it
    # knows (decode only: the unknown fields are not kept, so re-encoding differs).
    later = doc["readers_ignore_unknown_fields"]["vectors"]
    assert later
    for v in later:
        assert tideq.decode_envelope(bytes.fromhex(v["hex"])) == vector_fields(v), v["name"]
    fields = vector_fields(vectors[0])
    with pytest.raises(tideq.InvalidArgumentError, match="not a tideq job envelope"):
        tideq.decode_envelope(b"not msgpack")
    with pytest.raises(tideq.InvalidArgumentError, match="unknown envelope field"):
        tideq.encode_envelope({**fields, "extra": 1})
    with pytest.raises(tideq.InvalidArgumentError, match="'id' is missing"):
        tideq.encode_envelope({k: val for k, val in fields.items() if k != "id"})


def test_a_job_enqueued_here_has_the_envelope_the_vectors_describe(jq, redis_url, name):
    jq.enqueue(b'{"order":42}', id="order-42", max_attempts=5, backoff=tideq.Backoff.exponential(), timeout=30.0)
    raw = command(redis_url, "HGET", f"tideq:{{{name}}}:jobs", "order-42")
    env = tideq.decode_envelope(raw)
    assert env["payload"] == b'{"order":42}' and env["id"] == "order-42"
    assert env["backoff"] == {"kind": "exponential", "base_ms": 1000, "max_ms": 3_600_000, "jitter": True}
    assert (env["v"], env["max_attempts"], env["timeout_ms"]) == (1, 5, 30_000)


def test_asyncio_api_enqueues_and_administers_concurrently(client, name):
    async def main() -> None:
        aq = tideq.AsyncQueue(name, client, backoff=FAST)
        done = await asyncio.gather(*(aq.enqueue(b"%d" % i, id=f"j{i}") for i in range(200)))
        assert all(d.created for d in done)
        again = await aq.enqueue_many([(b"x", {"id": "j0"}), (b"later", {"id": "later", "delay": 60.0})])
        assert [d.created for d in again] == [False, True]
        infos = await asyncio.gather(aq.get("j5"), aq.get("later"), aq.get("missing"))
        assert infos[0] is not None and infos[0].payload == b"5"
        assert infos[1] is not None and infos[1].state == "delayed" and infos[2] is None
        await aq.cancel("later")
        with pytest.raises(tideq.JobNotFoundError):
            await aq.cancel("later")
        stats = await aq.stats()
        assert (stats.ready, stats.delayed, stats.cancelled) == (200, 0, 1)
        with pytest.raises(tideq.InvalidArgumentError):
            await aq.enqueue(b"x", delay=-1.0)
        with pytest.raises(TypeError):
            await aq.enqueue("text")  # type: ignore[arg-type]
        assert await aq.dead_letters() == [] and await aq.requeue_all() == 0 and await aq.purge() == 0
        with pytest.raises(tideq.JobNotFoundError):
            await aq.requeue("j1")

    asyncio.run(main())


def fail(job: tideq.Job) -> None:
    raise RuntimeError("boom")


def test_dead_letters_are_bounded_by_keep_dead_and_the_trimmed_are_counted(client, name):
    q = tideq.Queue(name, client, max_attempts=1, keep_dead=3)
    assert "keep_dead=3," in repr(q)
    q.enqueue_many([(b"x", {"id": f"d{i}"}) for i in range(5)])
    q.run(fail, concurrency=1, poll_interval=0.1, stop_when_drained=True)
    s = q.stats()
    assert (s.dead, s.dead_trimmed, s.dead_lettered) == (3, 2, 5)
    assert "dead_trimmed=2, lost=0" in repr(s)
    assert q.get("d0") is None and q.get("d1") is None, "a trimmed dead job's data is deleted"
    assert sorted(d.id for d in q.dead_letters()) == ["d2", "d3", "d4"]


def test_dead_letters_older_than_keep_dead_for_are_trimmed_at_the_next_death(client, name, redis_url):
    q = tideq.Queue(name, client, max_attempts=1, keep_dead=None, keep_dead_for=0.3)
    assert "keep_dead=None, keep_dead_for=0.3," in repr(q)
    q.enqueue(b"x", id="old")
    drain(q, fail)
    old = q.get("old")
    assert old is not None and old.state == "dead" and old.state_since_or_until is not None
    died = old.state_since_or_until
    assert wait_for(lambda: server_ms(redis_url) / 1000 - died > 0.35)
    q.enqueue(b"x", id="late")
    drain(q, fail)
    s = q.stats()
    assert (s.dead, s.dead_trimmed) == (1, 1)
    assert [d.id for d in q.dead_letters()] == ["late"]


def test_without_dead_letter_bounds_every_dead_job_is_kept(client, name):
    q = tideq.Queue(name, client, max_attempts=1, keep_dead=None, keep_dead_for=None)
    q.enqueue_many([b"%d" % i for i in range(5)])
    drain(q, fail)
    s = q.stats()
    assert (s.dead, s.dead_trimmed) == (5, 0)


def test_an_id_enqueued_again_after_its_job_completed_and_was_trimmed_creates_nothing(client, name, redis_url):
    # Completed jobs are deleted at once, so only the idempotency window remembers the id.
    q = tideq.Queue(name, client, keep_completed=0)
    assert q.enqueue(b"x", id="charge-42").created
    drain(q, lambda job: None)
    assert q.get("charge-42") is None, "its data is gone"
    assert not q.enqueue(b"x", id="charge-42").created, "within the window: nothing created"
    assert q.stats().ready == 0
    # Without a window, an id is remembered only while its job is kept.
    forgetful = tideq.Queue(name + "-forgetful", client, keep_completed=0, idempotency_window=None)
    assert "idempotency_window=None," in repr(forgetful)
    assert forgetful.enqueue(b"x", id="charge-42").created
    drain(forgetful, lambda job: None)
    assert forgetful.enqueue(b"x", id="charge-42").created
    # A short window: the id is free again once it has passed.
    short = tideq.Queue(name + "-short", client, keep_completed=0, idempotency_window=0.2)
    short.enqueue(b"x", id="a")
    drain(short, lambda job: None)
    done_at = server_ms(redis_url)
    assert not short.enqueue(b"x", id="a").created
    assert wait_for(lambda: server_ms(redis_url) - done_at > 300)
    short.enqueue(b"x", id="other")
    drain(short, lambda job: None)  # a completion forgets the ids past the window
    assert short.enqueue(b"x", id="a").created


def test_a_damaged_envelope_is_dead_lettered_and_still_listed_with_unreadable_set(jq, redis_url, name):
    jq.enqueue(b"x", id="broken")
    jq.enqueue(b"x", id="fine", max_attempts=1)
    jq.enqueue(b"x", id="gone")
    jobs_key = f"tideq:{{{name}}}:jobs"
    command(redis_url, "HSET", jobs_key, "broken", b"\x92\x01\x02")
    command(redis_url, "HDEL", jobs_key, "gone")
    handled: list[str] = []

    def handler(job: tideq.Job) -> None:
        handled.append(job.id)
        raise RuntimeError("boom")

    drain(jq, handler)
    assert handled == ["fine"], "neither damaged job reached the handler"
    dead = {d.id: d for d in jq.dead_letters()}
    assert sorted(dead) == ["broken", "fine"]
    broken = dead["broken"]
    assert broken.state == "dead" and broken.unreadable is not None and "envelope" in broken.unreadable
    assert broken.payload == b"\x92\x01\x02", "the raw stored bytes are there to look at"
    assert "unreadable=" in repr(broken)
    assert dead["fine"].unreadable is None and "unreadable" not in repr(dead["fine"])
    got = jq.get("broken")
    assert got is not None and got.unreadable == broken.unreadable
    s = jq.stats()
    assert (s.dead, s.lost) == (2, 1), "the job whose envelope was deleted is removed and counted"
    assert jq.get("gone") is None
    assert jq.purge() == 2
