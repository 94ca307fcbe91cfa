"""Reuses the Python harness (a real redis-server on a free port, or TIDEQ_TEST_REDIS_URL)."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "tideq_python_harness", Path(__file__).resolve().parents[1] / "python" / "conftest.py"
)
assert _spec and _spec.loader
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)

redis_url = _harness.redis_url
