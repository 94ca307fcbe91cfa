#!/usr/bin/env bash
# Python binding: build and install the package (`pip install .`, release) into .venv at the repo
# root, then run the Python tests against a private redis-server and check the stubs.
# Idempotent. Needs python3 with venv (Debian: python3-venv) and redis-server on PATH (or
# TIDEQ_TEST_REDIS_URL); the Rust toolchain builds the extension.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "== _tideq.pyi: its asyncio classes are what scripts/gen_async_pyi.py makes of the blocking ones"
python3 scripts/gen_async_pyi.py --check

if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
fi
PY="$ROOT/.venv/bin/python"
export PATH="$ROOT/.venv/bin:$PATH"  # the maturin build backend runs the `maturin` command

# opentelemetry-api and -sdk: tests/python/test_otel.py (the package's `otel` extra, and an SDK
# with an in-memory exporter to read the spans back). pyyaml: the docs' Kubernetes manifests
# (tests/python/test_autoscaling.py, scripts/readme.py). fastapi, starlette, httpx2 (Starlette's
# test client), uvicorn: tideq.asgi, its example app and docs/frameworks.md (tests/python/test_asgi.py).
"$PY" -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2" pytest mypy \
    "opentelemetry-api>=1.20" "opentelemetry-sdk>=1.20" pyyaml types-PyYAML \
    "fastapi>=0.115" "starlette>=0.40" "httpx2>=2" "uvicorn>=0.30"

# Share Rust build artefacts with the rest of the workspace.
export CARGO_TARGET_DIR="$ROOT/target"
# The release wheel (abi3); installed here, and from a local PyPI into a fresh virtualenv by
# scripts/release-check.sh --quick (`make release` links it against glibc 2.17 with zig instead).
rm -rf target/wheels
"$ROOT/.venv/bin/maturin" build --release --quiet --out target/wheels
"$PY" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/tideq-*.whl

# TIDEQ_BUILD_ONLY=1: build and install, run nothing (scripts/test-valkey.sh).
[ -n "${TIDEQ_BUILD_ONLY:-}" ] && exit 0

echo "== pytest tests/python (test_docs.py: the run-time docstrings equal the stub's; fix with scripts/sync_py_docs.py)"
"$PY" -m pytest tests/python -q
echo "== stubtest tideq._tideq"
"$PY" -m mypy.stubtest tideq._tideq
echo "== mypy tests/python (the stubs against real use; the README's blocks: scripts/readme.py)"
"$PY" -m mypy --check-untyped-defs --no-error-summary tests/python
