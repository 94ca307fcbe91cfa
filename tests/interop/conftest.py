import sys
from pathlib import Path

# Reuse the Python harness (real redis-server on a free port, or TIDEQ_TEST_REDIS_URL).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from conftest import *  # noqa: E402,F401,F403
