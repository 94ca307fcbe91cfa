"""The event log (blocking and asyncio APIs): off by default; when on, readers see each job's
events in order with their data; a named reader killed and started again (in another process)
misses nothing the log still holds, and one that fell behind it is told. One test per promise of
the core contract (core/tests/events.rs), checked across the Python/Rust crossing and across OS
processes, against a real redis-server."""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any, Optional, Union

import pytest

import tideq
from resp import command
from tideq_harness import Awaiting

Reader = Union[tideq.EventReader, Any]  # an EventReader, or an AsyncEventReader in Awaiting


@pytest.fixture(params=["blocking", "asyncio"])
def jq(request: pytest.FixtureRequest, client: tideq.Client, name: str) -> Any:
    """The queue under test, through the blocking API or the asyncio one."""
    if request.param == "blocking":
        return tideq.Queue(name, client, backoff=tideq.Backoff.fixed(0.01))
    return Awaiting(tideq.AsyncQueue(name, client, backoff=tideq.Backoff.fixed(0.01)))


def reader(jq: Any, **options: Any) -> Reader:
    """``jq.events(**options)``; an asyncio reader is wrapped so its calls block as the blocking
    reader's do, and its start (begun at the call) is awaited, as ``async with`` does."""
    r = jq.events(**options)
    if isinstance(r, tideq.AsyncEventReader):
        asyncio.run(r.__aenter__())
        return Awaiting(r)
    assert isinstance(r, tideq.EventReader)
    return r


def take(ev: Reader, n: int) -> list[tideq.Event]:
    out: list[tideq.Event] = []
    while len(out) < n:
        e = ev.next(timeout=5)
        assert e is not None, f"only {len(out)} of {n} events came: {out}"
        out.append(e)
    return out


def rest(ev: Reader) -> list[tideq.Event]:
    """The events that come until none comes for 0.3 s."""
    out = []
    while (e := ev.next(timeout=0.3)) is not None:
        out.append(e)
    return out


def log_keys(redis_url: str, name: str) -> list[bytes]:
    return list(command(redis_url, "KEYS", f"*{{{name}}}*:events"))


def test_with_events_off_by_default_nothing_is_logged(jq: Any, name: str, redis_url: str) -> None:
    everything = reader(jq, from_start=True)
    jq.enqueue(b"x", id="a")
    jq.run(lambda job: None, stop_when_drained=True, poll_interval=0.05)
    assert log_keys(redis_url, name) == []
    assert everything.next(timeout=0.3) is None


def test_a_log_length_of_zero_or_below_and_a_bad_reader_name_are_refused(jq: Any) -> None:
    with pytest.raises(tideq.InvalidArgumentError):
        jq.set_events(0)
    with pytest.raises(tideq.InvalidArgumentError):
        jq.set_events(-1)
    with pytest.raises(TypeError):
        jq.set_events()
    # Blocking: raised by events(); asyncio: by the reader's first use (its start).
    with pytest.raises(tideq.InvalidArgumentError):
        reader(jq, name="")
    with pytest.raises(tideq.InvalidArgumentError):
        reader(jq, name="x" * 300)


def test_turning_events_off_stops_the_log_and_deletes_it(jq: Any, name: str, redis_url: str) -> None:
    jq.set_events(100)
    ev = reader(jq)
    jq.enqueue(b"x", id="a")
    assert [(e.kind, e.job_id) for e in take(ev, 1)] == [("enqueued", "a")]
    assert log_keys(redis_url, name) != []
    jq.set_events(None)
    jq.enqueue(b"x", id="b")
    assert log_keys(redis_url, name) == []
    assert rest(ev) == []


def test_a_reader_sees_each_jobs_events_in_order_with_their_data(jq: Any) -> None:
    jq.set_events(1000)
    ev = reader(jq)
    jq.enqueue(b"ok", id="good")
    jq.enqueue(b"bad", id="bad", max_attempts=2)
    jq.enqueue(b"later", id="gone", delay=60)
    jq.cancel("gone")

    def handler(job: tideq.Job) -> Any:
        if job.id == "bad":
            raise ValueError("broken")
        job.progress({"pct": 50})
        return {"sent": True}

    jq.run(handler, stop_when_drained=True, poll_interval=0.05)
    events = take(ev, 13)
    assert all(isinstance(e, tideq.Event) for e in events)

    def of(job_id: str) -> list[tuple[str, Optional[bytes]]]:
        return [(e.kind, e.data) for e in events if e.job_id == job_id]

    assert of("good") == [
        ("enqueued", None),
        ("active", b"1"),
        ("progress", b'{"pct":50}'),
        ("completed", b'{"sent":true}'),
    ]
    assert [e.value for e in events if e.job_id == "good"] == [None, 1, {"pct": 50}, {"sent": True}]
    assert of("bad") == [
        ("enqueued", None),
        ("active", b"1"),
        ("failed", b"ValueError: broken"),
        ("retried", b"10"),
        ("active", b"2"),
        ("failed", b"ValueError: broken"),
        ("dead", b"ValueError: broken"),
    ]
    assert [e.value for e in events if e.job_id == "bad"][2:4] == [b"ValueError: broken", 10]
    assert of("gone") == [("enqueued", None), ("cancelled", None)]
    assert all(e.at_ms > 0 for e in events)
    assert [e.at_ms for e in events] == sorted(e.at_ms for e in events)
    assert ev.next(timeout=0.2) is None
    done = [e for e in events if e.kind == "completed"][0]
    assert repr(done) == f"Event(kind='completed', job_id='good', data=b'{{\"sent\":true}}', at_ms={done.at_ms})"
    assert done == done and done != events[0]


def test_a_large_result_kept_with_its_job_reaches_readers_in_full_and_one_not_kept_gives_its_size(
    client: tideq.Client, name: str, redis_url: str
) -> None:
    big = b"r" * 5000
    kept = tideq.Queue(name, client)
    not_kept = tideq.Queue(name + "-not-kept", client, keep_completed=0)
    for q in (kept, not_kept):
        q.set_events(100)
        q.enqueue_many([b"x"] * 20)
        q.run(lambda job: big, stop_when_drained=True, poll_interval=0.05)
    done = [e for e in take(reader(kept, from_start=True), 60) if e.kind == "completed"]
    assert [(e.data, e.data_omitted_bytes) for e in done] == [(big, None)] * 20
    done = [e for e in take(reader(not_kept, from_start=True), 60) if e.kind == "completed"]
    assert [(e.data, e.data_omitted_bytes, e.value) for e in done] == [(None, 5000, None)] * 20
    # The log holds the sizes, not the results.
    log = log_keys(redis_url, name + "-not-kept")[0]
    assert int(command(redis_url, "MEMORY", "USAGE", log, "SAMPLES", "0")) < 20 * 5000


def test_a_reader_from_now_on_sees_only_later_events_and_one_from_the_start_sees_all_kept(jq: Any) -> None:
    jq.set_events(1000)
    jq.enqueue(b"x", id="before")
    now = reader(jq)
    everything = reader(jq, from_start=True)
    jq.enqueue(b"x", id="after")
    assert [(e.kind, e.job_id) for e in take(now, 1)] == [("enqueued", "after")]
    assert [(e.kind, e.job_id) for e in take(everything, 2)] == [("enqueued", "before"), ("enqueued", "after")]
    assert now.next(timeout=0.2) is None


# A named reader in its own process, on its own client: prints "ready" once reading, then the id
# of each job enqueued (or LAGGED), slowly, so it is killed with events taken but not printed.
# From the start: the first run of a reader that must miss nothing.
READER = """
import asyncio, sys, time, tideq
url, queue, mode = sys.argv[1:4]

def show(e):
    print("LAGGED" if e.kind == "lagged" else e.job_id, flush=True)

if mode == "blocking":
    events = tideq.Queue(queue, url=url).events(name="mailer", from_start=True)
    print("ready", flush=True)
    for e in events:
        show(e)
        time.sleep(0.02)
else:
    async def main():
        async with tideq.AsyncQueue(queue, url=url).events(name="mailer", from_start=True) as events:
            print("ready", flush=True)
            async for e in events:
                show(e)
                await asyncio.sleep(0.02)
    asyncio.run(main())
"""


class Child:
    """A Python process running ``code``; its output lines collected by a thread."""

    def __init__(self, code: str, *args: str) -> None:
        self.err: IO[str] = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
        )
        self.lines: list[str] = []
        self._new: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._new.put(line.rstrip("\n"))
        self._new.put(None)

    def until(self, line: str, timeout: float = 20) -> None:
        """Waits for ``line`` (collecting the lines before it)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self._new.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                got = None
            if got is None:
                self.kill()
                pytest.fail(f"no {line!r} from the child; got {self.lines}\n{self.stderr()}")
            self.lines.append(got)
            if got == line:
                return

    def kill(self) -> list[str]:
        """SIGKILL; returns every line it printed (ready excluded)."""
        self.proc.kill()
        self.proc.wait()
        while (got := self._new.get(timeout=10)) is not None:
            self.lines.append(got)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return [line for line in self.lines if line != "ready"]

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read()


@pytest.mark.parametrize("mode", ["blocking", "asyncio"])
def test_a_named_reader_killed_and_started_again_misses_nothing_within_the_log(
    client: tideq.Client, name: str, redis_url: str, mode: str
) -> None:
    q = tideq.Queue(name, client)
    q.set_events(10_000)
    ids = [f"j{i:02}" for i in range(30)]
    first = Child(READER, redis_url, name, mode)
    first.until("ready")
    for i in ids[:10]:
        q.enqueue(b"x", id=i)
    first.until("j04")
    before = first.kill()  # mid-way: with events read but not printed (nor stored)
    for i in ids[10:20]:
        q.enqueue(b"x", id=i)
    second = Child(READER, redis_url, name, mode)
    second.until("ready")
    for i in ids[20:]:
        q.enqueue(b"x", id=i)
    second.until("j29")
    after = second.kill()
    assert "LAGGED" not in before + after
    # Each run in order with no gap; the second starts at or before where the first stopped (at
    # least once: what the first took but had not stored comes again), up to the last.
    assert before == ids[: len(before)], before
    assert after and after[0] in ids[: len(before) + 1], (before, after)
    start = ids.index(after[0])
    assert after == ids[start:], (before, after)


def test_a_named_reader_that_fell_behind_the_logs_length_is_told_how_much_it_missed(jq: Any) -> None:
    jq.set_events(10)
    jq.enqueue(b"x", id="first")
    ev = reader(jq, name="slow")
    jq.enqueue(b"x", id="second")
    assert take(ev, 1)[0].job_id == "second"
    ev.commit()
    del ev
    # Far more entries than the log keeps.
    for i in range(500):
        jq.enqueue(b"x", id=f"j{i}")
    ev = reader(jq, name="slow")
    lagged = take(ev, 1)[0]
    assert (lagged.kind, lagged.job_id) == ("lagged", "")
    assert lagged.data is not None and b"were trimmed" in lagged.data
    assert lagged.value == lagged.data  # not JSON: the bytes
    # Then it goes on from the oldest entry kept, up to the last one.
    later = rest(ev)
    assert later and {e.kind for e in later} == {"enqueued"}
    assert later[-1].job_id == "j499"


@pytest.mark.parametrize("mode", ["blocking", "asyncio"])
def test_leaving_a_named_readers_with_block_stores_its_place(client: tideq.Client, name: str, mode: str) -> None:
    q = tideq.Queue(name, client)
    q.set_events(1000)
    for i in range(3):
        q.enqueue(b"x", id=f"j{i}")

    def read(n: int, block: bool) -> list[str]:
        """The ids of the next ``n`` events of reader "r", in a ``with`` block or not."""
        if mode == "blocking":
            ev = q.events(name="r", from_start=True)
            if not block:
                return [e.job_id for e in take(ev, n)]
            with ev as entered:
                assert entered is ev
                return [e.job_id for e in take(ev, n)]

        async def ids(ev: tideq.AsyncEventReader) -> list[str]:
            out = []
            for _ in range(n):
                e = await ev.next(timeout=5)
                assert e is not None
                out.append(e.job_id)
            return out

        async def main() -> list[str]:
            ev = tideq.AsyncQueue(name, client).events(name="r", from_start=True)
            if not block:
                return await ids(ev)
            async with ev as entered:
                assert entered is ev
                return await ids(ev)

        return asyncio.run(main())

    # Taken but never stored: they come again.
    assert read(3, block=False) == ["j0", "j1", "j2"]
    assert read(3, block=True) == ["j0", "j1", "j2"]
    q.enqueue(b"x", id="j3")
    assert read(1, block=True) == ["j3"]


def test_a_named_reader_that_commits_after_taking_part_of_a_read_gets_the_rest_again(
    client: tideq.Client, name: str
) -> None:
    q = tideq.Queue(name, client)
    q.set_events(1000)
    for i in range(3):
        q.enqueue(b"x", id=f"j{i}")
    with q.events(name="r", from_start=True) as ev:
        assert [e.job_id for e in take(ev, 1)] == ["j0"]
    again = q.events(name="r", from_start=True)
    assert [e.job_id for e in rest(again)][-2:] == ["j1", "j2"]


def test_a_named_reader_from_now_on_that_dies_before_its_first_commit_misses_nothing(
    client: tideq.Client, name: str
) -> None:
    q = tideq.Queue(name, client)
    q.set_events(1000)
    ev = q.events(name="r")
    for i in range(3):
        q.enqueue(b"x", id=f"j{i}")
    assert [e.job_id for e in take(ev, 1)] == ["j0"]  # the read fetched all three: none stored
    del ev  # dies
    q.enqueue(b"x", id="j3")
    again = q.events(name="r")
    assert [e.job_id for e in rest(again)][-3:] == ["j1", "j2", "j3"]


def test_async_for_over_aq_events_reads_from_the_call_or_from_the_start(client: tideq.Client, name: str) -> None:
    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        await aq.set_events(1000)
        await aq.enqueue(b"x", id="before")
        # The first reader on a server loads its script; awaiting it settles that for the next.
        async with aq.events():
            pass
        now = aq.events()  # not awaited: it starts here
        everything = aq.events(from_start=True)
        assert isinstance(now, tideq.AsyncEventReader) and not asyncio.iscoroutine(now)
        assert repr(everything).startswith("AsyncEventReader(queue=")
        await aq.enqueue(b"x", id="after")
        seen = []
        async for e in now:
            seen.append(e.job_id)
            break
        assert seen == ["after"]
        seen = []
        async for e in everything:
            seen.append(e.job_id)
            if len(seen) == 2:
                break
        assert seen == ["before", "after"]
        assert await now.next(timeout=0.2) is None
        await now.commit()  # an unnamed reader stores nothing

    asyncio.run(main())


def test_a_blocking_reader_waiting_for_events_stops_on_ctrl_c(client: tideq.Client, name: str, redis_url: str) -> None:
    code = (
        "import sys, tideq\n"
        "events = tideq.Queue(sys.argv[2], url=sys.argv[1]).events()\n"
        "print('ready', flush=True)\n"
        "for e in events: pass\n"
    )
    child = Child(code, redis_url, name)
    child.until("ready")
    time.sleep(0.3)  # well inside the wait
    child.proc.send_signal(signal.SIGINT)
    assert child.proc.wait(timeout=10) != 0
    child.kill()
    assert "KeyboardInterrupt" in child.stderr()
