#!/usr/bin/env bash
# The suites against Valkey 8 instead of Redis 7: scripts/valkey.sh installs valkey-server, put
# first on PATH as redis-server, so every harness starts Valkey.
#   scripts/test-valkey.sh          Rust, Python and Node suites in full (`make test-valkey`)
#   scripts/test-valkey.sh --quick  the error-classification and ACL tests only (in `make test`)
# The quick part expects the bindings built (`make test` builds them first); the full run builds
# them. Where the Valkey binary has no TLS, the TLS tests are skipped and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
quick=false
[ "${1:-}" = "--quick" ] && quick=true

BIN="$(bash scripts/valkey.sh)"
export PATH="$BIN:$PATH"
echo "== against $(redis-server --version | head -1)"

# Does this build serve TLS? One that does not says so and exits at start.
probe="$(mktemp -d)"
out="$(timeout 5 redis-server --port 0 --tls-port $((20000 + RANDOM % 20000)) --tls-cert-file /dev/null --tls-key-file /dev/null \
  --save '' --dir "$probe" 2>&1 || true)"
rm -rf "$probe"
if grep -q "Failed finding TLS support" <<<"$out"; then
  export TIDEQ_TEST_NO_TLS="$(redis-server --version | awk '{print $1, $3}') is built without TLS: the TLS tests are skipped"
  echo "== $TIDEQ_TEST_NO_TLS"
fi

if $quick; then
  echo "== rust: error classification and ACL"
  cargo test -p tideq --lib --features mimalloc,opentelemetry -- error:: client::tests::servers
  cargo test -p tideq --features mimalloc,opentelemetry --test acl --test errors
  echo "== python: errors and ACL"
  .venv/bin/python -m pytest tests/python/test_acl.py tests/python/test_errors.py -q -p no:cacheprovider
  echo "== node: errors and ACL"
  node --test tests/node/acl.test.mjs tests/node/errors.test.mjs
  exit 0
fi

TIDEQ_BUILD_ONLY=1 bash scripts/test-python.sh
TIDEQ_BUILD_ONLY=1 bash scripts/test-node.sh
echo "== rust"
cargo test -p tideq --all-targets --no-fail-fast --features mimalloc,opentelemetry
echo "== python"
.venv/bin/python -m pytest tests/python -q -rs -p no:cacheprovider
echo "== node"
node --test tests/node/
echo "== interop"
.venv/bin/python -m pytest tests/interop -q -p no:cacheprovider
