#!/usr/bin/env bash
# Node binding: build the addon (release, as published: scripts/npm-packages.mjs packs it),
# check that the committed TypeScript definitions match the build and compile a sample of the API
# under `tsc --strict` (tests/node/types), then run the Node tests
# against real redis-server processes the harness starts (or TIDEQ_TEST_REDIS_URL).
# Needs cargo, node/npm and redis-server (scripts/ensure-deps.sh installs redis-server); installs
# Debian's chromium when missing (tests/node/dashboard.test.mjs drives the dashboard in it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

if ! command -v chromium >/dev/null; then
  echo "== apt-get install chromium (the dashboard's browser test)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi

echo "== npm install (the napi CLI), then napi build (the addon, and index.d.ts from the code)"
npm install --no-audit --no-fund
npm run --silent build

# TIDEQ_BUILD_ONLY=1: build, run nothing (scripts/test-valkey.sh, scripts/stress-process.sh).
[ -n "${TIDEQ_BUILD_ONLY:-}" ] && exit 0

echo "== committed index.d.ts matches the build"
if ! git diff --exit-code -- index.d.ts; then
  echo "index.d.ts changed when the addon was rebuilt: commit the regenerated file" >&2
  exit 1
fi

echo "== tsc --strict over tests/node/types (api.ts, tasks.ts, testing.ts) (the definitions as a TypeScript user sees them)"
npx --no-install tsc -p tests/node/types

echo "== node --test tests/node/"
node --test tests/node/
