"""Reuses the Python tests' harness (a real redis-server on a free port, or
TIDEQ_TEST_REDIS_URL) from tests/python/tideq_harness.py."""
import sys
from pathlib import Path

_PYTHON_TESTS = str(Path(__file__).resolve().parents[1] / "python")
if _PYTHON_TESTS not in sys.path:
    sys.path.insert(0, _PYTHON_TESTS)

from tideq_harness import redis_url  # noqa: E402

__all__ = ["redis_url"]
