#!/usr/bin/env bash
# The Django 6 backend (tideq.django) on the example project (examples/django), in a virtualenv of
# its own: Django 6 needs Python 3.12+, the main test venv may be older. Uses the wheel
# scripts/test-python.sh built (abi3: one wheel for every Python 3.9+). Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

find_python() {
    for p in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3 \
             "$HOME"/.pyenv/versions/3.12*/bin/python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 &&
            "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
            echo "$p"; return 0
        fi
    done
    return 1
}

if [ ! -x .venv-django/bin/python ]; then
    PY312="$(find_python)" || {
        echo "test-django: no Python 3.12 or newer found (Django 6 needs it): install python3.12" >&2
        exit 1
    }
    "$PY312" -m venv .venv-django
fi
PY="$ROOT/.venv-django/bin/python"
"$PY" -m pip install --quiet --disable-pip-version-check "django>=6.0,<6.1" pytest
WHEEL="$(ls target/wheels/tideq-*.whl 2>/dev/null | head -1)"
if [ -z "$WHEEL" ]; then
    echo "test-django: no wheel in target/wheels: run scripts/test-python.sh first" >&2
    exit 1
fi
"$PY" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
# TIDEQ_BUILD_ONLY=1: the venv for scripts/readme.py's Django samples, no tests.
[ -n "${TIDEQ_BUILD_ONLY:-}" ] && exit 0
echo "== pytest tests/django (Django $("$PY" -c 'import django; print(django.__version__)'), Python $("$PY" -c 'import platform; print(platform.python_version())'))"
cd tests/django
"$PY" -m pytest -q -p no:cacheprovider .
