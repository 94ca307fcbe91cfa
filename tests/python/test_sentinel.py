"""High availability through the Python binding: a Sentinel-managed primary (one replica, three
Sentinels, started once for this module by tests/cluster/redis-sentinel.sh) failing over under a
running worker and producer, and `replica_ack` against a lone server. The core's contract is
core/tests/sentinel.rs; these check that it crosses into Python intact."""

from __future__ import annotations

import pathlib
import subprocess
import tempfile
import threading
import time
from typing import Iterator, NamedTuple
from urllib.parse import urlparse

import pytest

import tideq
from resp import command

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cluster" / "redis-sentinel.sh"
MASTER = "tideq-primary"


class Sentinels(NamedTuple):
    primary_port: int
    replica_port: int
    urls: list[str]


@pytest.fixture(scope="module")
def sentinels() -> Iterator[Sentinels]:
    """A primary, its replica and three Sentinels monitoring it as `tideq-primary`."""
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT.relative_to(ROOT)} is not there (it starts the Sentinel setup)")
    workdir = tempfile.mkdtemp(prefix="tideq-py-sentinel-")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", workdir], capture_output=True, text=True, timeout=60
        )
        if started.returncode != 0:
            pytest.fail(f"{SCRIPT.name} start failed ({started.returncode}):\n{started.stdout}{started.stderr}")
        out = started.stdout.strip()
        primary, replica, urls = out.splitlines()[-1].split()
        yield Sentinels(int(primary), int(replica), urls.split(","))
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", workdir], check=False, timeout=30)


def role_of(port: int) -> str:
    """`master` or `slave`, as the Redis on `port` sees itself ("" if it does not answer)."""
    try:
        role = command(f"redis://127.0.0.1:{port}", "ROLE")[0]
    except OSError:
        return ""
    return role.decode() if isinstance(role, bytes) else str(role)


def primary_port(sentinel_url: str) -> int:
    """The primary's port as the Sentinel at `sentinel_url` reports it."""
    _host, port = command(sentinel_url, "SENTINEL", "get-master-addr-by-name", MASTER)
    return int(port)


def test_a_queue_over_sentinel_keeps_every_acknowledged_job_through_a_failover(sentinels, name):
    client = tideq.Client(sentinel=sentinels.urls, master_name=MASTER)
    assert (client.mode, client.sentinel, client.master_name) == ("sentinel", sentinels.urls, MASTER)
    q = tideq.Queue(name, client)
    # The producer waits for the replica (Redis WAIT): a Sentinel failover is not coordinated, so
    # a write the old primary takes just before its demotion is lost, and only replica_ack turns
    # that into a refused enqueue instead of a lost acknowledged one (as the Rust and Node tests).
    producer = tideq.Queue(name, tideq.Client(sentinel=sentinels.urls, master_name=MASTER,
                                              replica_ack=(1, 0.3)))
    done: set[str] = set()
    lock = threading.Lock()

    def handler(job: tideq.Job) -> None:
        with lock:
            done.add(job.id)

    worker = q.work(handler, concurrency=4, poll_interval=0.2)
    before = primary_port(sentinels.urls[0])
    assert before == sentinels.primary_port
    acked: list[str] = []
    errors: list[str] = []
    failed_over_at = None
    i = 0
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        if i == 50:
            port = urlparse(sentinels.urls[0]).port
            subprocess.run(
                ["redis-cli", "-p", str(port), "SENTINEL", "FAILOVER", MASTER],
                check=True, capture_output=True, timeout=10,
            )
        try:
            acked.append(producer.enqueue(b"x", id=f"f{i}").id)
        except tideq.TideqError as e:  # refused or cut off during the switch: not acknowledged
            errors.append(f"{e.code}: {e}")
        i += 1
        if failed_over_at is None and i > 50 and primary_port(sentinels.urls[0]) != before:
            failed_over_at = i
        # Keep writing until the old primary has been demoted (seconds after the switch): the
        # writes it took in between are refused (NOT_REPLICATED), not lost.
        if failed_over_at is not None and i > failed_over_at + 50 and role_of(before) == "slave":
            break
        time.sleep(0.02)
    assert failed_over_at is not None, "the Sentinels never failed over"
    assert primary_port(sentinels.urls[0]) == sentinels.replica_port
    assert len(acked) > 50 and len(acked) > len(errors), errors

    wait_until = time.monotonic() + 15
    while time.monotonic() < wait_until:
        with lock:
            if done.issuperset(acked):
                break
        time.sleep(0.05)
    with lock:
        missing = [j for j in acked if j not in done]
    assert not missing, f"{len(missing)} acknowledged jobs never processed: {missing[:10]} (enqueue errors: {errors[:5]})"
    print(f"sentinel failover: {len(acked)} enqueues acknowledged, {len(errors)} refused: {errors[:3]}")
    assert worker.running, "the worker stopped during the failover"
    stats = worker.shutdown()
    # An ack whose reply is cut off by the switch is retried and then refused as lease lost
    # (the first try had completed it), so it counts there: every job ran (checked above) and
    # every ack is accounted for.
    assert stats.completed + stats.lease_lost >= len(acked), stats
    assert q.stats().ready == 0


def test_replica_ack_on_a_lone_server_raises_not_replicated_and_the_job_exists(redis_url, name):
    client = tideq.Client(redis_url, replica_ack=(1, 0.1))
    assert client.replica_ack == (1, 0.1)
    assert repr(client).endswith("replica_ack=(1, 0.1))")
    q = tideq.Queue(name, client)
    with pytest.raises(tideq.NotReplicatedError) as err:
        q.enqueue(b"x", id="a")
    assert err.value.code == "NOT_REPLICATED"
    assert isinstance(err.value, tideq.TideqError)
    assert "0 of 1" in str(err.value)
    info = q.get("a")
    assert info is not None and (info.state, info.payload) == ("ready", b"x"), "the job is on the primary"
    with pytest.raises(tideq.NotReplicatedError):
        q.enqueue_many([(b"y", {"id": "b"}), (b"z", {"id": "c"})])
    assert q.get("b") is not None and q.get("c") is not None
    # Retrying with the same id is safe: nothing new is created.
    with pytest.raises(tideq.NotReplicatedError):
        q.enqueue(b"again", id="a")
    assert q.stats().enqueued == 3
    # Without replica_ack the same server acknowledges at once.
    assert tideq.Queue(name, tideq.Client(redis_url)).enqueue(b"w", id="d").created
