"""Chains and chords (``tideq.chain``, ``tideq.chord``): a chain's links run one after another,
each getting the previous result as its one argument; a chord's callback runs once after all its
children, with the list of their results. The core keeps the rules (core/tests/chains.rs); these
check the binding: what each task function is called with, ``job.args_from``, and bad input
raising with nothing written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tideq

FlowJob = tideq.FlowJob


def test_a_chain_gives_each_link_the_previous_result_as_its_one_argument(client, name):
    q = tideq.Queue(name, client, keep_completed=10)
    other = tideq.Queue(name + "-other", client, keep_completed=10, shards=2)
    seen: list[Any] = []

    @q.task
    def fetch(url: str) -> dict[str, Any]:
        seen.append(("fetch", url))
        return {"url": url, "body": "a b c"}

    # A dict result arrives whole, as the one argument (not spread as keywords).
    def parse(page: dict[str, Any]) -> list[str]:
        seen.append(("parse", page))
        return page["body"].split()

    @q.task
    def count(words: list[str]) -> int:
        seen.append(("count", words))
        return len(words)

    chain = tideq.chain(
        FlowJob(task="fetch", data={"url": "https://example.com"}),
        FlowJob(task="parse", queue=other),
        FlowJob(task="count", id="count"),
    )
    assert (chain.id, chain.task) == ("count", "count")
    made = q.enqueue_flow(chain)
    assert made.id == "count"
    assert other.run_tasks({"parse": parse}, stop_when_drained=True, poll_interval=0.1).completed == 0
    for _ in range(3):
        q.run_tasks(stop_when_drained=True, poll_interval=0.1)
        other.run_tasks({"parse": parse}, stop_when_drained=True, poll_interval=0.1)
    assert q.wait("count", timeout=10) == 3
    assert seen == [
        ("fetch", "https://example.com"),
        ("parse", {"url": "https://example.com", "body": "a b c"}),
        ("count", ["a", "b", "c"]),
    ]


def test_a_chord_callback_gets_the_list_of_results_in_the_childrens_order(client, name):
    q = tideq.Queue(name, client, keep_completed=10)
    got: list[Any] = []

    @q.task
    def square(n: int) -> int:
        return n * n

    @q.task
    def total(results: list[int]) -> int:
        got.append(results)
        return sum(results)

    chord = tideq.chord([FlowJob(task="square", data=[n]) for n in range(5)], FlowJob(task="total", id="t"))
    q.enqueue_flow(chord)
    info = q.get("t")
    assert info is not None and info.state == "waiting" and info.payload == b""
    q.run_tasks(stop_when_drained=True, poll_interval=0.1)
    assert q.wait("t", timeout=10) == 30
    assert got == [[0, 1, 4, 9, 16]]


def test_a_filled_in_job_says_where_its_arguments_came_from(client, name):
    q = tideq.Queue(name, client)
    seen: dict[str, Any] = {}

    def run(job: tideq.Job) -> Any:
        seen[job.task or "?"] = (job.args_from, job.args())
        return job.task

    q.enqueue_flow(
        tideq.chain(
            tideq.chord([FlowJob(task="a", data=1)], FlowJob(task="b")),
            FlowJob(task="c"),
        )
    )
    for _ in range(3):
        q.run(run, stop_when_drained=True, poll_interval=0.1)
    assert seen == {"a": (None, 1), "b": ("children", ["a"]), "c": ("previous", "b")}


def test_a_chord_can_start_a_chain_and_a_chain_can_be_a_chords_child(client, name):
    q = tideq.Queue(name, client, keep_completed=10)

    @q.task
    def num(n: int) -> int:
        return n

    @q.task
    def add_one(n: int) -> int:
        return n + 1

    @q.task
    def total(ns: list[int]) -> int:
        return sum(ns)

    inner = tideq.chain(FlowJob(task="num", data=[10]), FlowJob(task="add_one"))
    flow = tideq.chain(
        tideq.chord([inner, FlowJob(task="num", data=[5])], FlowJob(task="total")),
        FlowJob(task="add_one", id="end"),
    )
    q.enqueue_flow(flow)
    for _ in range(4):
        q.run_tasks(stop_when_drained=True, poll_interval=0.1)
    assert q.wait("end", timeout=10) == 17


def test_an_asyncio_chain_runs_async_task_functions(client, name):
    async def main() -> Any:
        aq = tideq.AsyncQueue(name, client, keep_completed=10)

        @aq.task
        async def double(n: int) -> int:
            return n * 2

        await aq.enqueue_flow(
            tideq.chain(FlowJob(task="double", data=[3]), FlowJob(task="double"), FlowJob(task="double", id="last"))
        )
        for _ in range(3):
            await aq.run_tasks(stop_when_drained=True, poll_interval=0.1)
        return await aq.wait("last", timeout=10)

    assert asyncio.run(main()) == 24


def test_a_step_outside_a_chain_gets_none(client, name):
    q = tideq.Queue(name, client, keep_completed=10)
    calls: list[Any] = []

    @q.task
    def ping(arg: Any = "unset") -> str:
        calls.append(arg)
        return "pong"

    q.enqueue_flow(FlowJob(task="ping", id="p", children=[FlowJob(task="ping")]))
    for _ in range(2):
        q.run_tasks(stop_when_drained=True, poll_interval=0.1)
    assert calls == [None, None]


def test_chains_and_chords_refuse_links_that_would_lose_their_arguments_and_write_nothing(client, name):
    q = tideq.Queue(name, client)
    with pytest.raises(ValueError, match="at least one link"):
        tideq.chain()
    with pytest.raises(ValueError, match='chain link 2 \\(task "b"\\) has arguments'):
        tideq.chain(FlowJob(task="a"), FlowJob(task="b", data=1))
    with pytest.raises(ValueError, match="children of its own"):
        tideq.chain(FlowJob(task="a"), FlowJob(task="b", children=[FlowJob(task="c")]))
    with pytest.raises(ValueError, match="callback \\(a raw job\\) has arguments"):
        tideq.chord([FlowJob(task="a")], FlowJob(b"payload"))
    with pytest.raises(TypeError):
        tideq.chain(FlowJob(task="a"), "b")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tideq.chord(FlowJob(task="a"), FlowJob(task="b"))  # type: ignore[arg-type]
    assert q.stats().enqueued == 0
