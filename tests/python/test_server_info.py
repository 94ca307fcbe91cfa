"""What the Redis server says of itself (``Client.server_info``) and the stats that count the
completed jobs kept apart from every job ever completed (``JobStats.completed_kept``) and the
flow jobs waiting for their children (``JobStats.waiting``)."""

from __future__ import annotations

import pickle
from typing import Callable

import tideq
from tideq_harness import RedisServer


def test_server_info_gives_version_memory_policy_clients_and_load(client: tideq.Client) -> None:
    info = client.server_info()
    assert isinstance(info, tideq.ServerInfo)
    assert info.server == "redis" and info.version.startswith("7")
    assert info.used_memory > 0 and info.connected_clients >= 1 and info.nodes == 1
    assert (info.maxmemory_policy, info.evicts) == ("noeviction", False)
    assert set(info.to_dict()) == {
        "server", "version", "used_memory", "maxmemory", "maxmemory_policy", "evicts",
        "connected_clients", "ops_per_sec", "uptime_secs", "nodes",
    }
    assert pickle.loads(pickle.dumps(info)) == info
    assert "evicts=False" in repr(info)


def test_server_info_says_when_the_policy_evicts_jobs(
    private_redis: Callable[..., RedisServer],
) -> None:
    server = private_redis("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
    info = tideq.Client(server.url, eviction_check="off").server_info()
    assert (info.maxmemory_policy, info.evicts, info.maxmemory) == ("allkeys-lru", True, 100 * 1024 * 1024)


def test_stats_count_the_completed_jobs_kept_apart_from_the_lifetime_counter(
    client: tideq.Client, name: str
) -> None:
    q = tideq.Queue(name, client, keep_completed=3)
    for _ in range(5):
        q.enqueue(b"x")
    q.run(lambda job: None, stop_when_drained=True, poll_interval=0.05)
    s = q.stats()
    assert (s.completed, s.completed_kept, s.waiting) == (5, 3, 0)
    assert len(q.jobs("completed")) == 3
    assert "completed_kept=3" in repr(s)
