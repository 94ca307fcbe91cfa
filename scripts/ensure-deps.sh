#!/usr/bin/env bash
# Installs what the demo, tests and bench need on a fresh Debian machine: redis-server and
# redis-tools (redis-cli, redis-benchmark), and libfaketime (tests that run a reader whose clock
# differs from Redis's). Cargo, Python 3 and Node are expected on the machine.
set -euo pipefail
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
  # Debian starts a system redis-server on 6379; tideq's tests start their own on free ports.
fi
if ! command -v faketime >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq faketime >/dev/null || {
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq faketime >/dev/null
  }
fi
for tool in cargo python3 node npm; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
redis-server --version
