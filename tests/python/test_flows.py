"""Flows (``enqueue_flow``, ``FlowJob``): a parent job runs once every one of its children
finished, and reads how they ended. The core keeps the rules (core/tests/workflows.rs); these
check the binding: what a ``FlowJob`` is given reaches the core (payloads, tasks, ``queue=``,
``on_failure``, options), the results and states come back (``ChildResult``, ``JobInfo``), and
bad input raises with nothing written."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import tideq

FlowJob = tideq.FlowJob


def job(id: str, *children: FlowJob, **options: Any) -> FlowJob:
    """A payload job whose payload is its id."""
    return FlowJob(id.encode(), id=id, children=children, **options)


def handler(order: list[str], seen: dict[str, list[tideq.ChildResult]]) -> Any:
    """Records the order of runs and what each saw of its children; fails jobs whose payload
    starts with "fail", returns ``{"id": <id>}`` otherwise."""

    def run(j: tideq.Job) -> Any:
        order.append(j.id)
        seen[j.id] = j.children_results()
        if j.payload.startswith(b"fail"):
            raise ValueError(f"{j.id} broke")
        return {"id": j.id}

    return run


def drain(q: tideq.Queue, handle: Any) -> tideq.WorkerStats:
    return q.run(handle, stop_when_drained=True, poll_interval=0.1)


def by_id(results: list[tideq.ChildResult]) -> list[tideq.ChildResult]:
    return sorted(results, key=lambda c: c.id)


def test_a_parent_runs_after_its_children_and_reads_their_results(client, name):
    q = tideq.Queue(name, client)
    made = q.enqueue_flow(job("parent", job("a"), job("b"), job("c")))
    assert (made.id, made.created) == ("parent", True)
    order: list[str] = []
    seen: dict[str, list[tideq.ChildResult]] = {}
    results = {"a": {"id": "a"}, "b": None, "c": b"raw"}

    def run(j: tideq.Job) -> Any:
        order.append(j.id)
        seen[j.id] = j.children_results()
        return results.get(j.id)

    assert drain(q, run).completed == 4
    assert order[-1] == "parent" and sorted(order[:3]) == ["a", "b", "c"]
    assert seen["a"] == [], "a job without children has no results"
    kids = by_id(seen["parent"])
    assert [(c.queue, c.id, c.outcome, c.error) for c in kids] == [
        (name, "a", "completed", None),
        (name, "b", "completed", None),
        (name, "c", "completed", None),
    ]
    assert (kids[0].result, kids[0].json()) == (b'{"id":"a"}', {"id": "a"})
    assert (kids[1].result, kids[1].json()) == (None, None), "returned nothing"
    assert kids[2].result == b"raw"
    assert isinstance(kids[0], tideq.ChildResult)
    assert repr(kids[0]) == f"ChildResult(queue={name!r}, id='a', outcome='completed', result=<10 bytes>)"
    assert by_id(q.children_results("parent")) == kids, "kept while the parent is"
    info = q.get("parent")
    assert info is not None and info.state == "completed" and info.children_pending is None


def test_an_asyncio_parent_reads_its_children_with_children_results_async(client, name):
    async def main() -> None:
        aq = tideq.AsyncQueue(name, client)
        made = await aq.enqueue_flow(job("parent", job("kid")))
        assert made.id == "parent"
        seen: dict[str, list[tideq.ChildResult]] = {}

        async def run(j: tideq.Job) -> str:
            seen[j.id] = await j.children_results_async()
            return j.id

        stats = await aq.run(run, stop_when_drained=True, poll_interval=0.1)
        assert stats.completed == 2
        assert [(c.id, c.outcome, c.json()) for c in seen["parent"]] == [("kid", "completed", "kid")]
        assert await aq.children_results("parent") == seen["parent"]

    asyncio.run(main())


def test_children_on_other_queues_given_as_queue_or_async_queue_release_their_parent(client, name):
    q = tideq.Queue(name, client)
    parts = tideq.Queue(f"{name}-parts", client, shards=3)
    more = tideq.AsyncQueue(f"{name}-more", client)  # only its core queue is used
    more_blocking = tideq.Queue(more.name, client)
    # A grandchild back on q, under a child on parts (a child without queue= goes to its
    # parent's queue).
    mid = job("mid", job("leaf", queue=q), job("inherits"), queue=parts)
    flow = job("root", *(job(f"p{i}", queue=parts) for i in range(6)), mid, job("m", queue=more))
    assert (mid.queue, mid.children[0].queue, flow.queue) == (parts.name, name, None)
    q.enqueue_flow(flow)
    leaf, inherits, m = q.get("leaf"), parts.get("inherits"), more_blocking.get("m")
    assert leaf is not None and leaf.parent == (parts.name, "mid")
    assert inherits is not None and inherits.parent == (parts.name, "mid")
    assert m is not None and m.parent == (name, "root")
    order: list[str] = []
    seen: dict[str, list[tideq.ChildResult]] = {}
    run = handler(order, seen)
    workers = [x.work(run, poll_interval=0.1) for x in (q, parts, more_blocking)]
    try:
        assert q.wait("root", timeout=30) == {"id": "root"}
    finally:
        for w in workers:
            w.stop()
        for w in workers:
            w.join()
    assert order.count("root") == 1 and order[-1] == "root"
    assert order.index("leaf") < order.index("mid")
    assert sorted((c.queue, c.id, c.outcome) for c in seen["root"]) == sorted(
        [(parts.name, f"p{i}", "completed") for i in range(6)]
        + [(parts.name, "mid", "completed"), (more.name, "m", "completed")]
    )
    assert sorted((c.queue, c.id) for c in seen["mid"]) == sorted([(parts.name, "inherits"), (name, "leaf")])


def test_tasks_in_a_flow_are_encoded_as_enqueue_task_does_and_run_by_name(client, name):
    q = tideq.Queue(name, client)
    calls: list[Any] = []

    @q.task
    def part(n: int) -> int:
        calls.append(("part", n))
        return n * 10

    @q.task
    def total(label: str) -> str:
        calls.append(("total", label))
        return label

    flow = FlowJob(
        task="total",
        data={"label": "sum"},
        id="total",
        children=[
            FlowJob(task="part", data=[1], id="p1"),
            FlowJob(task="part", data=2, format="msgpack", id="p2"),
        ],
    )
    assert (flow.task, flow.children[1].task) == ("total", "part")
    q.enqueue_flow(flow)
    payloads = {}
    for id in ("total", "p1", "p2"):
        info = q.get(id)
        assert info is not None
        payloads[id] = info.payload
    assert payloads == {"total": b'{"label":"sum"}', "p1": b"[1]", "p2": b"\x02"}
    assert q.run_tasks(stop_when_drained=True, poll_interval=0.1).completed == 3
    assert calls[-1] == ("total", "sum") and sorted(calls[:2]) == [("part", 1), ("part", 2)]
    assert {c.id: c.json() for c in q.children_results("total")} == {"p1": 10, "p2": 20}


def test_on_failure_values_reach_the_core(client, name):
    q = tideq.Queue(name, client)
    ignored = FlowJob(b"fail", id="meh", on_failure="ignore", max_attempts=1)
    continued = FlowJob(b"fail", id="bad", on_failure="continue", max_attempts=1)
    failing = FlowJob(b"fail", id="doomed", max_attempts=1)
    assert (ignored.on_failure, continued.on_failure, failing.on_failure) == ("ignore", "continue", "fail")
    q.enqueue_flow(job("runs", ignored, continued, job("fine")))
    q.enqueue_flow(job("dies", failing, job("other")))
    order: list[str] = []
    seen: dict[str, list[tideq.ChildResult]] = {}
    drain(q, handler(order, seen))
    assert [(c.id, c.outcome, c.error) for c in by_id(seen["runs"])] == [
        ("bad", "failed", "ValueError: bad broke"),
        ("fine", "completed", None),
        ("meh", "ignored", "ValueError: meh broke"),
    ]
    assert "dies" not in order, "a failed child (on_failure='fail') fails its parent"
    dead = q.get("dies")
    assert dead is not None and dead.state == "dead"
    assert dead.last_error is not None and "doomed" in dead.last_error and "doomed broke" in dead.last_error


def test_get_shows_a_waiting_parent_its_pending_children_and_each_childs_parent(client, name):
    q = tideq.Queue(name, client)
    q.enqueue_flow(job("root", job("a"), job("mid", job("leaf"))))
    root, a, mid = q.get("root"), q.get("a"), q.get("mid")
    assert root is not None and (root.state, root.children_pending, root.parent) == ("waiting", 2, None)
    assert mid is not None and (mid.state, mid.children_pending, mid.parent) == ("waiting", 1, (name, "root"))
    assert a is not None and (a.state, a.children_pending, a.parent) == ("ready", None, (name, "root"))
    assert repr(mid).endswith(f", parent=({name!r}, 'root'), children_pending=1)")
    # Waiting parents are listed (they could not be): by id, and page by page.
    assert [j.id for j in q.jobs("waiting")] == ["mid", "root"]
    page = q.jobs_page("waiting", limit=1)
    assert [j.id for j in page.jobs] == ["mid"] and page.cursor is not None
    assert [j.id for j in q.jobs_page("waiting", cursor=page.cursor, limit=5).jobs] == ["root"]
    assert sorted(j.id for j in q.jobs("ready")) == ["a", "leaf"], "only jobs without children are ready"


def test_cancelling_a_parent_cancels_its_pending_children(client, name):
    q = tideq.Queue(name, client)
    q.enqueue_flow(job("parent", job("a"), job("later", job("deep"), delay=60)))
    q.cancel("parent")
    for id in ("parent", "a", "later", "deep"):
        assert q.get(id) is None, id
    s = q.stats()
    assert (s.ready, s.delayed, s.cancelled) == (0, 0, 4)


def test_a_flow_job_is_a_payload_or_a_task_never_both_nor_neither(client, name):
    q = tideq.Queue(name, client)
    with pytest.raises(TypeError, match="exactly one of payload or task"):
        FlowJob(b"x", task="t")
    with pytest.raises(TypeError, match="exactly one of payload or task"):
        FlowJob()
    with pytest.raises(TypeError, match="task="):
        FlowJob(b"x", data={"a": 1})
    with pytest.raises(TypeError, match="payload must be bytes"):
        FlowJob("text")  # type: ignore[arg-type]
    with pytest.raises(tideq.InvalidArgumentError, match="xml"):
        FlowJob(task="t", format="xml")  # type: ignore[arg-type]
    assert q.stats().enqueued == 0


def test_a_queue_that_is_not_a_queue_is_a_type_error(client, name):
    q = tideq.Queue(name, client)
    with pytest.raises(TypeError, match="queue must be a Queue or an AsyncQueue, not str"):
        FlowJob(b"x", queue=name)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not CappedQueue"):
        FlowJob(b"x", queue=tideq.CappedQueue(name, client, capacity=10))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="children must be FlowJob objects, not bytes"):
        FlowJob(b"x", children=[b"y"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of FlowJob, not int"):
        FlowJob(b"x", children=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        q.enqueue_flow(b"x")  # type: ignore[arg-type]
    assert q.stats().enqueued == 0


def test_a_bad_on_failure_is_refused(client, name):
    with pytest.raises(tideq.InvalidArgumentError, match='"fail", "ignore" or "continue", got "sometimes"'):
        FlowJob(b"x", on_failure="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FlowJob(b"x", on_failure=1)  # type: ignore[arg-type]


def test_a_duplicate_or_existing_id_or_a_bad_option_refuses_the_whole_flow_and_writes_nothing(client, name):
    q = tideq.Queue(name, client)
    other = tideq.Queue(f"{name}-other", client)
    with pytest.raises(tideq.InvalidArgumentError, match='"dup" appears twice'):
        q.enqueue_flow(job("r1", job("dup"), job("dup", queue=other)))
    other.enqueue(b"x", id="taken")
    with pytest.raises(tideq.InvalidArgumentError, match="exists already"):
        q.enqueue_flow(job("r2", job("fresh", queue=other), job("taken", queue=other)))
    with pytest.raises(tideq.InvalidArgumentError, match="max_attempts"):
        q.enqueue_flow(job("r3", job("k", max_attempts=0)))
    with pytest.raises(tideq.InvalidArgumentError, match="delay"):
        job("r4", delay=-1)

    async def refused_async() -> None:
        aq = tideq.AsyncQueue(name, client)
        with pytest.raises(tideq.InvalidArgumentError, match="appears twice"):
            await aq.enqueue_flow(job("r5", job("twice"), job("twice")))

    asyncio.run(refused_async())
    assert q.stats().enqueued == 0
    assert other.stats().enqueued == 1 and other.get("fresh") is None
    for id in ("r1", "dup", "r2", "r3", "k", "r5", "twice"):
        assert q.get(id) is None and other.get(id) is None, id
    # A root whose id exists already creates nothing, its children included.
    q.enqueue(b"x", id="root")
    again = q.enqueue_flow(job("root", job("child", queue=other)))
    assert (again.id, again.created) == ("root", False)
    assert other.get("child") is None


def test_a_flow_job_shows_what_it_was_given(client, name):
    q = tideq.Queue(name, client)
    kid = FlowJob(task="part", data=1, queue=q)
    root = FlowJob(b"abc", id="root", children=[kid], on_failure="continue")
    assert (root.id, root.task, root.queue, root.on_failure, root.children) == (
        "root",
        None,
        None,
        "continue",
        (kid,),
    )
    assert (kid.id, kid.task, kid.queue, kid.on_failure, kid.children) == (None, "part", name, "fail", ())
    assert repr(root) == "FlowJob(id='root', payload=<3 bytes>, on_failure='continue', children=<1 jobs>)"
    assert repr(kid) == f"FlowJob(id=None, task='part', queue={name!r}, payload=<1 bytes>, on_failure='fail', children=<0 jobs>)"
    # A job given twice is two jobs (each gets its own random id).
    made = q.enqueue_flow(FlowJob(b"p", children=[kid, kid]))
    info = q.get(made.id)
    assert info is not None and info.children_pending == 2


def test_a_job_reused_past_the_flow_limit_is_refused_without_being_laid_out_whole(client, name):
    q = tideq.Queue(name, client)
    kid = FlowJob(b"x")
    for _ in range(40):
        kid = FlowJob(b"x", children=[kid, kid])  # 2**41 - 1 jobs
    with pytest.raises(tideq.InvalidArgumentError, match="at most 100000 jobs"):
        q.enqueue_flow(kid)
    assert q.stats().enqueued == 0


def test_a_chord_of_100000_children_and_its_callback_fits_the_limit_and_one_more_does_not(client, name):
    q = tideq.Queue(name, client)
    kids = [FlowJob(task="part", data=i) for i in range(100_000)]
    made = q.enqueue_flow(tideq.chord(kids, FlowJob(task="total", id="total")))
    assert (made.id, made.created) == ("total", True)
    info = q.get("total")
    assert info is not None and info.children_pending == 100_000
    kids.append(FlowJob(task="part", data=-1))
    with pytest.raises(tideq.InvalidArgumentError, match="at most 100000 jobs under its root"):
        q.enqueue_flow(tideq.chord(kids, FlowJob(task="total", id="over")))
    assert q.get("over") is None


def test_a_deep_chain_of_jobs_is_enqueued_without_recursion(client, name):
    q = tideq.Queue(name, client)
    chain = FlowJob(b"x", id="j0")
    for i in range(1, 20_000):
        chain = FlowJob(b"x", id=f"j{i}", children=[chain])
    q.enqueue_flow(chain)
    del chain
    top, bottom = q.get("j19999"), q.get("j0")
    assert top is not None and (top.state, top.children_pending) == ("waiting", 1)
    assert bottom is not None and (bottom.state, bottom.parent) == ("ready", (name, "j1"))


def test_a_long_chain_of_flow_jobs_is_freed_without_overflowing_the_stack():
    def build_and_drop() -> None:
        chain = FlowJob(b"x")
        for _ in range(200_000):
            chain = FlowJob(b"x", children=[chain])
        del chain  # a crash here would take the test process down

    # A thread's stack is smaller than the main thread's.
    t = threading.Thread(target=build_and_drop)
    t.start()
    t.join()
