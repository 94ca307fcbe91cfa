"""Cross-language encryption at rest: jobs sealed in Python (AES-256-GCM, key "k2") run on a Node
worker and a Rust worker given the same key, with identical payload bytes; a worker without the
key dead-letters them naming it. Redis holds no plaintext payload on the way."""

import os
import subprocess
import uuid
from pathlib import Path

import pytest
import tideq

ROOT = Path(__file__).resolve().parents[2]
NODE = ["node", str(ROOT / "tests/interop/interop_jobs.mjs")]
RUST = [str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug/examples/interop")]
KEY = bytes(range(32))
MARKER = b"interop-plaintext-marker"


@pytest.fixture(scope="module", autouse=True)
def rust_example():
    subprocess.run(["cargo", "build", "-q", "-p", "tideq", "--example", "interop"], cwd=ROOT, check=True)


def work_with(cmd, url, queue, key_line):
    env = dict(os.environ, TIDEQ_INTEROP_KEY=key_line)
    res = subprocess.run(cmd + ["work", url, queue], capture_output=True, text=True, check=True, env=env)
    return [bytes.fromhex(line) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("runtime", ["node", "rust"])
def test_jobs_sealed_in_python_run_on_node_and_rust_workers(redis_url, runtime):
    queue = f"interop-enc-{uuid.uuid4().hex}"
    q = tideq.Queue(queue, url=redis_url, encryption=tideq.Encryption("k2", {"k2": KEY}))
    data = [MARKER + bytes([i]) * i for i in range(20)]
    q.enqueue_many(data)
    raw = tideq.Client(redis_url)
    assert all(MARKER not in bytes(j.payload) for j in tideq.Queue(queue, raw).jobs("ready", 0, 100))
    cmd = NODE if runtime == "node" else RUST
    assert work_with(cmd, redis_url, queue, f"k2={KEY.hex()}") == data


@pytest.mark.parametrize("runtime", ["node", "rust"])
def test_a_worker_without_the_key_dead_letters_naming_it(redis_url, runtime):
    queue = f"interop-enc-{uuid.uuid4().hex}"
    q = tideq.Queue(queue, url=redis_url, encryption=tideq.Encryption("k2", {"k2": KEY}))
    q.enqueue(b"secret", id="j")
    cmd = NODE if runtime == "node" else RUST
    assert work_with(cmd, redis_url, queue, f"k1={'00' * 32}") == []
    info = tideq.Queue(queue, url=redis_url, encryption=tideq.Encryption("k1", {"k1": bytes(32)})).get("j")
    assert info is not None and info.state == "dead"
    assert info.last_error is not None and '"k2" is not available' in info.last_error


CAPPED_NODE = ["node", str(ROOT / "tests/interop/interop_capped.mjs")]


@pytest.mark.parametrize("runtime", ["node", "rust"])
def test_capped_items_sealed_in_python_pop_in_clear_on_node_and_rust(redis_url, runtime):
    queue = f"interop-cenc-{uuid.uuid4().hex}"
    q = tideq.CappedQueue(queue, url=redis_url, encryption=tideq.Encryption("k2", {"k2": KEY}))
    data = [MARKER + bytes([i]) * i for i in range(20)]
    q.push_many([("g", d) for d in data])
    assert all(MARKER not in p.item for p in tideq.CappedQueue(queue, url=redis_url).peek("g", 100))
    cmd = CAPPED_NODE if runtime == "node" else RUST
    env = dict(os.environ, TIDEQ_INTEROP_KEY=f"k2={KEY.hex()}")
    res = subprocess.run(cmd + ["pop", redis_url, queue, "g", "100"], capture_output=True, text=True, check=True, env=env)
    assert [bytes.fromhex(line) for line in res.stdout.splitlines()] == data
