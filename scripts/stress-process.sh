#!/usr/bin/env bash
# Runs every Node test file whose tests run a worker or consumer in a child process, N times in a
# row (default 30), and fails unless every run passed. A flaky process test is a failing test:
# this is how one shows itself (the last one was a worker stopping on garbage collection).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
TIDEQ_BUILD_ONLY=1 bash scripts/test-node.sh >/dev/null
files=(tests/node/process.test.mjs tests/node/gc.test.mjs tests/node/worker.test.mjs
  tests/node/events.test.mjs tests/node/schedules.test.mjs tests/node/otel.test.mjs
  tests/node/worker_child.test.mjs tests/node/worker_cli.test.mjs tests/node/worker_cli_health.test.mjs
  tests/node/serve.test.mjs tests/node/testing.test.mjs tests/node/vitest.test.mjs)
passed=0
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  log="$(mktemp)"
  if node --test "${files[@]}" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "run $i: passed"
  else
    echo "run $i: FAILED"
    grep -E "^not ok|# fail|Error|assert" "$log" | head -40
  fi
  rm -f "$log"
done
echo "stress-process: $passed passed, $((runs - passed)) failed, in $(( $(date +%s) - start )) s"
[ "$passed" -eq "$runs" ]
