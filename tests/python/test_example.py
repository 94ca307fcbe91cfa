"""The quick-start examples run as documented, so they never rot."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(name: str, redis_url: str) -> str:
    env = dict(os.environ, TIDEQ_REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_quickstart_example_runs(redis_url):
    assert "handled" in run_example("capped_quickstart.py", redis_url)


def test_jobs_quickstart_example_runs(redis_url):
    out = run_example("jobs_quickstart.py", redis_url)
    assert "sending to ada@example.com (attempt 1)" in out
    assert "sending to bob@example.com (attempt 1)" in out
    assert "WorkerStats(completed=2, failed=0" in out
