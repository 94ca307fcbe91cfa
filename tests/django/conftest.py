"""The Django backend's tests run in a Python 3.12+ virtualenv of their own
(scripts/test-django.sh), against a private redis-server, on the example project."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "django"
sys.path.insert(0, str(ROOT / "tests" / "python"))  # tideq_harness
sys.path.insert(0, str(EXAMPLE))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
