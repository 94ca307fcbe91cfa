"""Graphs (``enqueue_graph``, ``GraphNode``): jobs that run after several others. The core keeps
the rules (core/tests/graphs.rs); these check the binding: a diamond runs in order with its
results passed, per-edge policies reach the core, and a bad graph raises with nothing written."""

from __future__ import annotations

import pytest

import tideq

FlowJob = tideq.FlowJob
GraphNode = tideq.GraphNode


def test_a_diamond_runs_its_last_job_once_after_both_with_their_results(client, name):
    q = tideq.Queue(name, client, keep_completed=100)
    a, b, c, d = (f"{name}-{x}" for x in "abcd")

    @q.task
    def double(n: int) -> int:
        return 2 * n

    @q.task
    def add(results: list) -> int:  # the results of the jobs it runs after, in `after` order
        return sum(results)

    made = q.enqueue_graph([
        GraphNode(a, FlowJob(task="double", data=[1])),
        GraphNode(b, FlowJob(task="add"), after=[a]),
        GraphNode(c, FlowJob(task="add"), after=[(a, "continue")]),
        GraphNode(d, FlowJob(task="add"), after=[b, c]),
    ])
    assert (made.id, made.created) == (d, True)
    info = q.get(b)
    assert info is not None and info.state == "waiting" and info.children_pending == 1
    assert [p[1] for p in info.parents] == [d]
    first = q.get(a)
    assert first is not None and sorted(p[1] for p in first.parents) == [b, c]  # a reports to both
    assert first.parent == first.parents[0]
    worker = q.work_tasks()
    # a = 2 * 1; b and c each add up [a]; d adds up [b, c].
    assert q.wait(d, timeout=20) == 4
    assert q.wait(b, timeout=5) == 2 and q.wait(c, timeout=5) == 2
    worker.shutdown()


def test_a_graph_with_a_cycle_or_a_missing_job_raises_with_nothing_written(client, name):
    q = tideq.Queue(name, client)
    x, y = f"{name}-x", f"{name}-y"
    with pytest.raises(tideq.InvalidArgumentError, match=f"cycle.*{x} → {y} → {x}"):
        q.enqueue_graph([
            GraphNode(x, FlowJob(b"x"), after=[y]),
            GraphNode(y, FlowJob(b"y"), after=[x]),
        ])
    with pytest.raises(tideq.InvalidArgumentError, match="which is not in the graph"):
        q.enqueue_graph([GraphNode(x, FlowJob(b"x"), after=["nope"])])
    with pytest.raises(ValueError):
        GraphNode(x, FlowJob(b"x"), after=[(y, "sometimes")])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        GraphNode(x, FlowJob(b"x"), after=[1])  # type: ignore[list-item]
    assert q.get(x) is None and q.get(y) is None
    assert q.stats().enqueued == 0
