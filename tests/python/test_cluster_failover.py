"""A primary of a real local Redis Cluster crashes (SIGKILL) under a Python producer: its enqueues
wait out the failover instead of failing, and Python's logging hears one line when they start
waiting and one when they work again, not the cluster client's line per node connection and retry.
A cluster of its own (the crash would disturb test_cluster.py's). The core's contract is
core/tests/cluster_outage.rs."""

from __future__ import annotations

import logging
import os
import pathlib
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from typing import Iterator

import pytest

import tideq
from resp import command

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cluster" / "redis-cluster.sh"


@pytest.fixture
def cluster() -> Iterator[tuple[str, list[str]]]:
    """(the cluster's folder, its seed URLs); stopped after the test."""
    workdir = tempfile.mkdtemp(prefix="tideq-py-failover-")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", workdir], capture_output=True, text=True, timeout=60
        )
        if started.returncode != 0:
            pytest.fail(f"{SCRIPT.name} start failed:\n{started.stdout}{started.stderr}")
        seeds = started.stdout.strip().splitlines()[-1].split(",")
        yield workdir, [f"redis://{hostport}" for hostport in seeds]
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", workdir], check=False, timeout=30)


def primary_port(seed: str, tag: str) -> int:
    """The port of the primary serving the slot of hash tag `tag`."""
    slot = command(seed, "CLUSTER", "KEYSLOT", "{" + tag + "}")
    for start, end, primary, *_ in command(seed, "CLUSTER", "SLOTS"):
        if start <= slot <= end:
            return int(primary[1])
    raise AssertionError(f"no primary for slot {slot}")


# Issue 40 items 24 and 29, from Python: a `RedisError` "Moved" after 5.2-5.9 s, and dozens of
# "ClusterConnInner: connection ... lost; repairing in background" lines per failover.
def test_a_python_producer_rides_out_a_primary_crash_with_one_log_line_each_way(
    cluster: tuple[str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    workdir, seeds = cluster
    caplog.set_level(logging.WARNING)
    name = f"mv-{uuid.uuid4().hex[:8]}"
    q = tideq.Queue(name, tideq.Client(cluster=seeds))
    victim = primary_port(seeds[0], name)
    errors: list[BaseException] = []
    calls: list[tuple[float, float]] = []
    stop = threading.Event()

    def produce() -> None:
        i = 0
        while not stop.is_set():
            started = time.monotonic()
            try:
                q.enqueue(b"x", id=f"p{i}")
            except tideq.TideqError as e:
                errors.append(e)
            calls.append((started, time.monotonic() - started))
            i += 1
            time.sleep(0.005)

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        time.sleep(1)
        caplog.clear()
        with open(os.path.join(workdir, str(victim), "redis.pid")) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
        killed = time.monotonic()
        # Failed over once a call that began after the crash has returned well after it.
        deadline = killed + 60
        while not any(s > killed and s + d > killed + 0.5 for s, d in list(calls)):
            assert time.monotonic() < deadline, "the cluster never failed over"
            time.sleep(0.05)
        time.sleep(2)
    finally:
        stop.set()
        producer.join(30)
    longest = max(d for _, d in calls)
    print(f"{len(calls)} enqueues, the longest {longest:.1f} s, {len(errors)} errors")
    assert not errors, errors
    assert longest > 1.5, "no enqueue was caught in the crash"
    redis_lines = [r for r in caplog.records if r.name.split(".")[0] == "redis"]
    assert not redis_lines, [r.getMessage() for r in redis_lines]
    ours = [r.getMessage() for r in caplog.records if r.name.split(".")[0] == "tideq"]
    assert sum("did not run a command" in m for m in ours) == 1, ours
    assert sum("works again" in m for m in ours) == 1, ours
