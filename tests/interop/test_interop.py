"""Cross-language: the three runtimes share one format and one set of scripts, so bytes pushed
from any runtime come out identical in every other."""
import json
import os
import random
import subprocess
import uuid
from pathlib import Path

import pytest
import tideq

ROOT = Path(__file__).resolve().parents[2]
NODE = ["node", str(ROOT / "tests/interop/interop_capped.mjs")]
RUST = [str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug/examples/interop")]


@pytest.fixture(scope="module", autouse=True)
def rust_example():
    subprocess.run(["cargo", "build", "-q", "-p", "tideq", "--example", "interop"], cwd=ROOT, check=True)


def items():
    rng = random.Random(42)
    out = [b"", b":", b"12:34", bytes(range(256)), "é✓ unicode".encode(), b"\x00" * 100]
    out += [rng.randbytes(rng.randint(1, 300)) for _ in range(50)]
    return out


def pop_with(cmd, url, queue, group, n):
    res = subprocess.run(cmd + ["pop", url, queue, group, str(n)], capture_output=True, text=True, check=True)
    return [bytes.fromhex(line) for line in res.stdout.splitlines()]


def push_with(cmd, url, queue, group, data):
    subprocess.run(cmd + ["push", url, queue, group] + [d.hex() for d in data], check=True)


def test_items_pushed_from_python_are_consumed_in_node_and_rust_with_identical_bytes(redis_url):
    queue = f"interop-{uuid.uuid4().hex}"
    q = tideq.CappedQueue(queue, url=redis_url, capacity=1000)
    data = items()
    q.push_many([("to-node", d) for d in data] + [("to-rust", d) for d in data])
    assert pop_with(NODE, redis_url, queue, "to-node", 1000) == data
    assert pop_with(RUST, redis_url, queue, "to-rust", 1000) == data


def test_items_pushed_from_node_and_rust_are_consumed_in_python_with_identical_bytes(redis_url):
    queue = f"interop-{uuid.uuid4().hex}"
    q = tideq.CappedQueue(queue, url=redis_url, capacity=1000)
    data = items()
    push_with(NODE, redis_url, queue, "from-node", data)
    push_with(RUST, redis_url, queue, "from-rust", data)
    assert q.pop_batch("from-node", 1000) == data
    assert q.pop_batch("from-rust", 1000) == data


NODE_JOBS = ["node", str(ROOT / "tests/interop/interop_jobs.mjs")]


def enqueue_with(runtime, url, queue, data):
    if runtime == "python":
        tideq.Queue(queue, url=url).enqueue_many(list(data))
    else:
        cmd = NODE_JOBS if runtime == "node" else RUST
        subprocess.run(cmd + ["enqueue", url, queue] + [d.hex() for d in data], check=True)


def work_with(runtime, url, queue):
    if runtime == "python":
        seen = []
        q = tideq.Queue(queue, url=url)
        q.run(lambda job: seen.append(bytes(job.payload)), concurrency=1, stop_when_drained=True)
        return seen
    cmd = NODE_JOBS if runtime == "node" else RUST
    res = subprocess.run(cmd + ["work", url, queue], capture_output=True, text=True, check=True)
    return [bytes.fromhex(line) for line in res.stdout.splitlines()]


RUNTIMES = ["python", "node", "rust"]


@pytest.mark.parametrize("producer", RUNTIMES)
@pytest.mark.parametrize("worker", RUNTIMES)
def test_jobs_enqueued_in_each_runtime_are_processed_in_each_other_with_identical_payloads(redis_url, producer, worker):
    queue = f"interop-jobs-{uuid.uuid4().hex}"
    data = items()
    enqueue_with(producer, redis_url, queue, data)
    assert work_with(worker, redis_url, queue) == data


NODE_TASKS = ["node", str(ROOT / "tests/interop/interop_tasks.mjs")]

# Task arguments every runtime must carry unchanged: nested objects and lists, unicode, numbers
# at the edges of the integer range both encodings share, booleans and null.
TASK_ARGS = [
    {"to": "ada@example.com", "n": 1},
    {"name": "é✓ unicode", "tags": ["a", "b"], "nested": {"x": [1, 2, {"y": None}]}},
    {"big": 2**53 - 1, "neg": -(2**31), "flag": True, "ratio": 0.25},
    [1, "two", 3.5],
    "a bare string",
]


def enqueue_task_with(runtime, url, queue, name, fmt, values):
    if runtime == "python":
        q = tideq.Queue(queue, url=url)
        for v in values:
            q.enqueue_task(name, v, format=fmt)
    else:
        cmd = NODE_TASKS if runtime == "node" else RUST
        subprocess.run(cmd + ["enqueue-task", url, queue, name, fmt] + [json.dumps(v) for v in values], check=True)


def work_tasks_with(runtime, url, queue, name):
    if runtime == "python":
        seen = []
        q = tideq.Queue(queue, url=url)
        q.run(lambda job: seen.append((job.task, job.args())), concurrency=1, stop_when_drained=True)
        assert {task for task, _ in seen} == {name}
        return [args for _, args in seen]
    cmd = NODE_TASKS if runtime == "node" else RUST
    res = subprocess.run(cmd + ["work-tasks", url, queue, name], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("producer", RUNTIMES)
@pytest.mark.parametrize("worker", RUNTIMES)
def test_tasks_enqueued_by_name_in_each_runtime_run_in_each_other_with_the_same_arguments(redis_url, producer, worker, fmt):
    queue = f"interop-tasks-{uuid.uuid4().hex}"
    enqueue_task_with(producer, redis_url, queue, "send-email", fmt, TASK_ARGS)
    assert work_tasks_with(worker, redis_url, queue, "send-email") == TASK_ARGS


NODE_RESULTS = ["node", str(ROOT / "tests/interop/interop_results.mjs")]


def test_results_returned_by_a_node_handler_are_read_by_python_get_and_wait(redis_url):
    queue = f"interop-{uuid.uuid4().hex}"
    q = tideq.Queue(queue, url=redis_url)
    q.enqueue("héllo".encode(), id="j1")
    q.enqueue(b"\x00\xffraw", id="j2-raw")
    subprocess.run(NODE_RESULTS + ["work", redis_url, queue], check=True, timeout=60)
    info = q.get("j1")
    assert info is not None and info.state == "completed"
    assert info.result == {"from": "node", "echo": "héllo"}
    assert info.progress == {"step": 1}
    assert q.wait("j1", timeout=5) == {"from": "node", "echo": "héllo"}
    raw = q.get("j2-raw")
    assert raw is not None and raw.result_bytes == b"\x00\xffraw" and raw.result == b"\x00\xffraw"


def test_results_returned_by_a_python_handler_are_read_by_node_wait_and_get(redis_url):
    queue = f"interop-{uuid.uuid4().hex}"
    q = tideq.Queue(queue, url=redis_url)
    q.enqueue(b"from python", id="p1")
    waiter = subprocess.Popen(NODE_RESULTS + ["wait", redis_url, queue, "p1"], stdout=subprocess.PIPE, text=True)

    def handler(job: tideq.Job) -> dict:
        job.progress([1, "two"])
        return {"from": "python", "echo": job.text(), "n": 1.5}

    q.work(handler, stop_when_drained=True, poll_interval=0.05).join(timeout=20)
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 0
    assert json.loads(out) == {"result": {"from": "python", "echo": "from python", "n": 1.5},
                               "progress": [1, "two"]}


NODE_FLOWS = ["node", str(ROOT / "tests/interop/interop_flows.mjs")]


def enqueue_flow_with(runtime, url, queue):
    if runtime == "python":
        q = tideq.Queue(queue, url=url)
        parts = tideq.Queue(f"{queue}-parts", url=url, shards=4)
        squares = [tideq.FlowJob(task="square", data=n, queue=parts) for n in range(1, 5)]
        q.enqueue_flow(tideq.chain(tideq.chord(squares, tideq.FlowJob(task="sum")),
                                   tideq.FlowJob(task="describe", id="end")))
        return
    cmd = NODE_FLOWS if runtime == "node" else RUST
    subprocess.run(cmd + ["enqueue-flow", url, queue], check=True, timeout=60)


def work_flow_with(runtime, url, queue):
    if runtime == "python":
        q = tideq.Queue(queue, url=url)
        parts = tideq.Queue(f"{queue}-parts", url=url, shards=4)
        tasks = {
            "square": lambda n: n * n,
            "sum": lambda all: sum(all),
            "describe": lambda total: {"total": total, "runtime": "python"},
        }
        workers = [q.work_tasks(tasks), parts.work_tasks(tasks)]
        try:
            return q.wait("end", timeout=30)
        finally:
            for w in workers:
                w.shutdown()
    cmd = NODE_FLOWS if runtime == "node" else RUST
    res = subprocess.run(cmd + ["work-flow", url, queue], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(res.stdout)


@pytest.mark.parametrize("producer", RUNTIMES)
@pytest.mark.parametrize("worker", RUNTIMES)
def test_a_flow_of_tasks_built_in_each_runtime_runs_on_each_others_workers(redis_url, producer, worker):
    """A chord (on a 4-shard queue) whose callback starts a chain: built by `producer`, its tasks
    run by name by `worker`, the results handed from task to task in the shared encoding."""
    queue = f"interop-flow-{uuid.uuid4().hex}"
    enqueue_flow_with(producer, redis_url, queue)
    assert work_flow_with(worker, redis_url, queue) == {"total": 1 + 4 + 9 + 16, "runtime": worker}
