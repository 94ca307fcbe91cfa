"""The quick-start example runs as documented, so it never rots."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "capped_quickstart.py"


def test_quickstart_example_runs(redis_url):
    env = dict(os.environ, TIDEQ_REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "handled" in out.stdout
