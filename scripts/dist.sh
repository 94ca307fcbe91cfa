#!/usr/bin/env bash
# `make dist`: what a release would publish, in dist/: the Python wheel (abi3, manylinux) and
# sdist, the npm tarball with the prebuilt addon (and the sources, for platforms without one),
# and a `cargo package` check of the core crate; then installs the wheel and the tarball where
# there is no cargo and runs a job with each (scripts/dist-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bash scripts/ensure-deps.sh >/dev/null
rm -rf dist && mkdir -p dist
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2"
rm -rf target/wheels
.venv/bin/maturin build --release --quiet --out target/wheels
cp target/wheels/tideq-*.whl dist/
.venv/bin/maturin sdist --out dist
TIDEQ_SKIP_ADDON_BUILD=1 npm install --no-audit --no-fund --silent
npm run --silent build
npm pack --silent --pack-destination dist >/dev/null
mkdir -p target/npm && cp dist/tideq-*.tgz target/npm/
cargo package -p tideq --allow-dirty --quiet
cp "$CARGO_TARGET_DIR"/package/tideq-*.crate dist/
bash scripts/dist-check.sh
ls -l dist
