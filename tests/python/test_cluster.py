"""Both queue kinds through the Python binding on a real local Redis Cluster (6 nodes: 3 masters,
3 replicas, started once for this module by tests/cluster/redis-cluster.sh), blocking and asyncio,
sharded queues, and the Client options that choose a deployment. The core's own cluster contract
is core/tests/cluster.rs; these check that it crosses into Python intact."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import tempfile
import threading
import time
from collections import Counter
from typing import Iterator

import pytest

import tideq
from resp import command, keys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cluster" / "redis-cluster.sh"
FAST = tideq.Backoff.fixed(0.05)


@pytest.fixture(scope="module")
def cluster_nodes() -> Iterator[list[str]]:
    """Seed URLs of a fresh local cluster, stopped (and its folder removed) after the module."""
    workdir = tempfile.mkdtemp(prefix="tideq-py-cluster-")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", workdir], capture_output=True, text=True, timeout=60
        )
        if started.returncode != 0:
            pytest.fail(f"{SCRIPT.name} start failed ({started.returncode}):\n{started.stdout}{started.stderr}")
        out = started.stdout.strip()
        seeds = out.splitlines()[-1].split(",")
        yield [f"redis://{hostport}" for hostport in seeds]
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", workdir], check=False, timeout=30)


@pytest.fixture
def cc(cluster_nodes: list[str]) -> tideq.Client:
    return tideq.Client(cluster=cluster_nodes)


def wait_for(cond, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


def test_a_cluster_client_reports_its_mode_and_seeds(cc, cluster_nodes):
    assert cc.mode == "cluster"
    assert cc.cluster == cluster_nodes
    assert cc.sentinel is None and cc.master_name is None and cc.replica_ack is None
    assert cc.url == cluster_nodes[0]
    assert repr(cc).startswith(f"Client(cluster=['{cluster_nodes[0]}', ")


def test_bad_client_option_combinations_raise_invalid_argument(cluster_nodes):
    url = cluster_nodes[0]
    bad: list[dict] = [
        {"url": url, "cluster": cluster_nodes},
        {"url": url, "sentinel": [url], "master_name": "m"},
        {"cluster": cluster_nodes, "sentinel": [url], "master_name": "m"},
        {"cluster": []},
        {"sentinel": [], "master_name": "m"},
        {"sentinel": [url]},  # no master_name
        {"sentinel": [url], "master_name": ""},
        {"master_name": "m"},  # master_name without sentinel
        {"cluster": cluster_nodes, "master_name": "m"},
        {"cluster": ["127.0.0.1:7000"]},  # seeds are URLs
        {"replica_ack": (0, 1.0)},
        {"replica_ack": (1, 0.0)},
        {"replica_ack": (-1, 1.0)},
        {"replica_ack": (1, -1.0)},
    ]
    for kwargs in bad:
        with pytest.raises(tideq.InvalidArgumentError) as err:
            tideq.Client(**kwargs)
        assert err.value.code == "INVALID_ARGUMENT", kwargs
    with pytest.raises(TypeError):
        tideq.Client(cluster=url)  # type: ignore[arg-type]  # a str, not a list


@pytest.mark.parametrize(
    "cls", [tideq.Queue, tideq.AsyncQueue, tideq.CappedQueue, tideq.AsyncCappedQueue]
)
def test_shards_is_1_to_1024_on_every_queue_class(cc, cls):
    assert cls("plain", cc).shards == 1
    assert cls("split", cc, shards=1024).shards == 1024
    for n in (0, 1025, -1):
        with pytest.raises(tideq.InvalidArgumentError, match="shards"):
            cls("q", cc, shards=n)
    with pytest.raises(tideq.InvalidArgumentError, match="#"):
        cls("a#b", cc, shards=3)
    assert "shards=3" in repr(cls("q", cc, shards=3))


def test_capped_queue_works_end_to_end_on_the_cluster(cc, name):
    q = tideq.CappedQueue(name, cc, capacity=5)
    assert q.push("g1", b"a") == 0
    drops = q.push_many([(f"g{i % 7}", b"%d" % i) for i in range(700)])
    assert len(drops) == 700 and sum(drops) == 700 + 1 - 7 * 5
    assert q.len("g1") == 5
    assert q.pop_batch("g1", 2) == [b"666", b"673"], "the newest 5 of g1, oldest first"
    batch = q.next_batch(10)
    assert batch is not None and len(batch[1]) in (3, 5)
    assert len(q.groups()) >= 5
    seen: list[bytes] = []
    lock = threading.Lock()

    def handler(group: str, items: list[bytes]) -> None:
        with lock:
            seen.extend(items)

    stats = q.run(handler, concurrency=2, poll_interval=0.1, stop_when_empty=True)
    assert len(seen) == 7 * 5 - 2 - len(batch[1]) == stats.items
    s = q.stats()
    assert (s.pushed, s.delivered, s.groups) == (701, 7 * 5, 0)


def test_job_queue_works_end_to_end_on_the_cluster(cc, name):
    q = tideq.Queue(name, cc, backoff=FAST, max_attempts=2)
    done = q.enqueue_many([(b"%d" % i, {"id": f"j{i}"}) for i in range(300)])
    assert all(d.created for d in done)
    assert not q.enqueue(b"again", id="j0").created
    q.enqueue(b"later", id="later", delay=60.0)
    info = q.get("later")
    assert info is not None and info.state == "delayed"
    q.cancel("later")
    assert q.get("later") is None
    q.enqueue(b"bad", id="bad")
    worked: Counter[str] = Counter()
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            worked[job.id] += 1
        if job.id == "bad":
            raise ValueError("no")

    worker = q.work(handler, concurrency=8, poll_interval=0.1)
    assert wait_for(lambda: q.stats().dead == 1 and q.stats().completed == 300)
    dead = q.dead_letters()
    assert [d.id for d in dead] == ["bad"] and dead[0].last_error == "ValueError: no"
    worker.shutdown()
    q.requeue("bad")
    bad = q.get("bad")
    assert bad is not None and bad.state == "ready"
    q.run(handler, poll_interval=0.1, stop_when_drained=True)
    assert q.purge() == 1
    assert all(worked[f"j{i}"] == 1 for i in range(300)) and worked["bad"] == 4
    s = q.stats()
    assert (s.enqueued, s.completed, s.cancelled, s.dead_lettered, s.dead) == (302, 300, 1, 2, 0)


def test_both_queue_kinds_work_end_to_end_on_the_cluster_with_asyncio(cc, name):
    async def main() -> None:
        cq = tideq.AsyncCappedQueue(name + "-c", cc, capacity=100)
        assert await cq.push("g", b"first") == 0
        await cq.push_many([(f"g{i % 4}", b"%d" % i) for i in range(40)])
        assert await cq.pop_batch("g") == [b"first"]
        nb = await cq.next_batch(3)
        assert nb is not None and len(nb[1]) == 3
        got: list[bytes] = []

        async def on_batch(group: str, items: list[bytes]) -> None:
            got.extend(items)

        await cq.run(on_batch, poll_interval=0.1, stop_when_empty=True)
        assert sorted(got + nb[1]) == sorted(b"%d" % i for i in range(40))
        assert (await cq.stats()).delivered == 41

        jq = tideq.AsyncQueue(name + "-j", cc, backoff=FAST, max_attempts=1)
        await jq.enqueue_many([b"a", (b"b", {"id": "b"}), (b"c", {"id": "c", "delay": 60.0})])
        await jq.enqueue(b"bad", id="bad")
        info = await jq.get("c")
        assert info is not None and info.state == "delayed"
        await jq.cancel("c")
        seen: list[bytes] = []

        async def on_job(job: tideq.Job) -> None:
            seen.append(job.payload)
            if job.id == "bad":
                raise RuntimeError("async no")

        worker = jq.work(on_job, poll_interval=0.1)
        for _ in range(500):
            if (await jq.stats()).dead == 1 and len(seen) == 3:
                break
            await asyncio.sleep(0.02)
        await worker.shutdown()
        dead = await jq.dead_letters()
        assert [d.id for d in dead] == ["bad"] and dead[0].last_error == "RuntimeError: async no"
        await jq.requeue("bad")
        info = await jq.get("bad")
        assert info is not None and info.state == "ready"
        await jq.run(on_job, poll_interval=0.1, stop_when_drained=True)
        assert await jq.purge() == 1
        s = await jq.stats()
        assert (s.enqueued, s.completed, s.cancelled, s.dead_lettered) == (4, 2, 1, 2)
        assert sorted(seen) == [b"a", b"b", b"bad", b"bad"]

    asyncio.run(main())


def masters_holding(cluster_nodes: list[str], pattern: str) -> int:
    """How many masters hold keys matching `pattern` (replicas hold copies: not counted)."""
    masters = [url for url in cluster_nodes if command(url, "ROLE")[0] == b"master"]
    assert len(masters) == 3
    return sum(1 for url in masters if keys(url, pattern))


def test_a_sharded_job_queue_processes_every_job_exactly_once_and_stats_add_up(cc, cluster_nodes, name):
    q = tideq.Queue(name, cc, shards=3, backoff=FAST)
    assert q.shards == 3
    ids = [f"s{i}" for i in range(600)]
    q.enqueue_many([(i.encode(), {"id": i}) for i in ids[:500]])
    for i in ids[500:]:
        assert q.enqueue(i.encode(), id=i).created
    assert not q.enqueue(b"dup", id="s7").created, "an id is idempotent across shards"
    # the shards' keys sit in three hash tags, on three masters
    assert masters_holding(cluster_nodes, f"tideq:{{{name}#*:jobs") == 3
    for i in ("s1", "s2", "s3", "s4", "s5"):
        info = q.get(i)
        assert info is not None and (info.id, info.state, info.payload) == (i, "ready", i.encode())
    cancelled = ["s10", "s11", "s12", "s13"]
    for i in cancelled:
        q.cancel(i)
        assert q.get(i) is None
    with pytest.raises(tideq.JobNotFoundError):
        q.cancel("s10")
    s = q.stats()
    assert (s.ready, s.enqueued, s.cancelled) == (596, 600, 4)
    worked: Counter[str] = Counter()
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            worked[job.id] += 1

    stats = q.run(handler, concurrency=10, poll_interval=0.1, stop_when_drained=True)
    expected = set(ids) - set(cancelled)
    assert set(worked) == expected and set(worked.values()) == {1}
    assert stats.completed == 596
    s = q.stats()
    assert (s.ready, s.active, s.completed, s.enqueued, s.cancelled) == (0, 0, 596, 600, 4)
    done = q.get("s599")
    assert done is not None and done.state == "completed"


def test_a_sharded_capped_queue_delivers_every_item_once(cc, cluster_nodes, name):
    q = tideq.CappedQueue(name, cc, shards=3, capacity=1000)
    assert q.shards == 3
    items = [(f"game:{i % 30}", b"%d" % i) for i in range(900)]
    q.push_many(items)
    assert masters_holding(cluster_nodes, f"tideq:{{{name}#*") == 3
    assert len(q.groups()) == 30
    seen: list[bytes] = []
    lock = threading.Lock()

    def handler(group: str, batch: list[bytes]) -> None:
        with lock:
            seen.extend(batch)

    consumer = q.consume(handler, concurrency=3, batch_size=16, poll_interval=0.2)
    assert wait_for(lambda: len(seen) >= 900)
    q.push("late", b"late")  # an idle consumer is woken on that group's shard
    assert wait_for(lambda: len(seen) >= 901)
    consumer.shutdown()
    assert sorted(seen) == sorted([b for _, b in items] + [b"late"])
    s = q.stats()
    assert (s.pushed, s.delivered, s.groups) == (901, 901, 0)
