"""The ``tideq`` command installed with the Python package runs the Rust command line (the same
code as the ``tideq`` binary): one test per promise, against a real redis-server."""

import json
import os
import shutil
import subprocess
import sys

import tideq


def tideq_command() -> list[str]:
    """The installed console script next to this interpreter (pip puts it there)."""
    script = os.path.join(os.path.dirname(sys.executable), "tideq")
    if os.path.exists(script):
        return [script]
    found = shutil.which("tideq")
    assert found, "the tideq console script is not installed"
    return [found]


def test_the_tideq_script_lists_queues_and_stats_as_the_binary_does(
    client: tideq.Client, name: str, redis_url: str
) -> None:
    q = tideq.Queue(name, client)
    q.enqueue(b"x", id="a")
    out = subprocess.run(
        [*tideq_command(), "--url", redis_url, "stats", name, "--json"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ready"] == 1
    out = subprocess.run(
        [*tideq_command(), "--url", redis_url, "queues", "--json"],
        capture_output=True, text=True, timeout=30,
    )
    (line,) = [q for q in json.loads(out.stdout) if q["name"] == name]
    assert (line["kind"], line["shards"], line["ready"]) == ("jobs", 1, 1)


def test_the_tideq_script_exits_with_the_command_lines_codes() -> None:
    out = subprocess.run([*tideq_command(), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("tideq ")
    out = subprocess.run([*tideq_command(), "no-such-command"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "no-such-command" in out.stderr


def test_the_tideq_script_ends_quietly_with_status_0_when_its_reader_closes_the_pipe(
    client: tideq.Client, name: str, redis_url: str
) -> None:
    q = tideq.Queue(name, client)
    for i in range(200):
        q.enqueue(b"x", id=f"job-{i}")
    proc = subprocess.Popen(
        [*tideq_command(), "--url", redis_url, "jobs", name, "ready"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -1` does once it has its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 0, stderr
    assert stderr == "", "no panic, no traceback"


def test_the_tideq_script_says_so_for_a_queue_that_does_not_exist(redis_url: str) -> None:
    out = subprocess.run(
        [*tideq_command(), "--url", redis_url, "stats", "no-such-queue-here"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 3 and out.stdout == ""
    assert 'no job queue "no-such-queue-here" here' in out.stderr
