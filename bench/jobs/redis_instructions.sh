#!/bin/bash
# Redis CPU per job, counted instead of timed: the instructions redis-server runs (valgrind's
# callgrind) while a Rust worker at concurrency C (100 by default) drains N plain jobs, per job.
# Unlike the timings of run.py, this barely moves between runs or machines, so it shows what a
# change to the Lua scripts costs (at concurrency 100 the count depends a little on how many jobs
# each fetch carries; at concurrency 1 it does not: one fetch per job). The jobs are enqueued
# first (not counted); then only the drain is measured.
# Usage (from the repo root, after make test built the Python binding):
#   bash bench/jobs/redis_instructions.sh [N=5000] [C=100]   # instructions per job and the top 25
set -euo pipefail
N=${1:-5000}
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
cargo build -q --release -p tideq-bench --bin jobs
out=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" --instr-atstart=no \
  redis-server --port "$port" --save "" --appendonly no >"$out/log" 2>&1 &
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
.venv/bin/python -c "
import tideq
q = tideq.Queue('instr', url='redis://127.0.0.1:$port')
q.enqueue_many([b'{\"user_id\":123456,\"task\":\"send_welcome_email\",\"n\":1}'] * $N)"
callgrind_control -i on >/dev/null 2>&1
JOBS_BENCH_WORKER_C=${2:-100} ./target/release/jobs "redis://127.0.0.1:$port" "$N" worker instr >/dev/null
callgrind_control -i off >/dev/null 2>&1
callgrind_control -d >/dev/null 2>&1
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
sleep 1
f=$(ls -S "$out"/cg.out* | head -1)
callgrind_annotate "$f" 2>/dev/null | awk -v n="$N" '/PROGRAM TOTALS/ { t = $1; gsub(",", "", t); printf "Redis instructions per job: %.0f\n", t / n }'
callgrind_annotate --inclusive=yes "$f" 2>/dev/null | grep -E "luaCallFunction|lua_pcall|scriptCall|parseReply \[|lua_pushlstring" | head -6
rm -rf "$out"
