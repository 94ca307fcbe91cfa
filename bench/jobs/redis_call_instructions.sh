#!/bin/bash
# Redis work per call, counted instead of timed: the instructions redis-server runs (valgrind's
# callgrind) per call of a one-line Python statement, repeated N times after 50 warm-up calls.
# Where redis_instructions.sh measures a worker's drain per job, this measures one operation:
#   bash bench/jobs/redis_call_instructions.sh [N=2000] [STATEMENT]
# STATEMENT may use `q` (a tideq.Queue on the measured server), `i` (the call's index) and
# `cmd(*args)` (a raw command on a plain socket, for floors such as PING). The default is one
# enqueue of a small job. Examples:
#   bash bench/jobs/redis_call_instructions.sh 2000 'cmd("PING")'
#   bash bench/jobs/redis_call_instructions.sh 200 'q.enqueue_many([b"{}"] * 100)'
# Run from the repo root after the Python binding is built (make test or scripts/test-python.sh).
set -euo pipefail
N=${1:-2000}
BODY=${2:-'q.enqueue(b"{\"user_id\":123456,\"n\":1}")'}
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" --instr-atstart=no \
  redis-server --port "$port" --save "" --appendonly no >"$out/log" 2>&1 &
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
cat >"$out/run.py" <<PY
import socket, subprocess, sys
import tideq
port = int(sys.argv[1])
q = tideq.Queue('instr', url='redis://127.0.0.1:%d' % port)
s = socket.create_connection(('127.0.0.1', port))
def cmd(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    s.sendall(b'*%d\r\n' % len(a) + b''.join(b'\$%d\r\n%s\r\n' % (len(x), x) for x in a))
    return s.recv(1 << 20)
for i in range(50): $BODY
subprocess.run(['callgrind_control', '-i', 'on'], capture_output=True)
for i in range($N): $BODY
subprocess.run(['callgrind_control', '-i', 'off'], capture_output=True)
PY
.venv/bin/python "$out/run.py" "$port"
callgrind_control -d >/dev/null 2>&1
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
sleep 1
f=$(ls -S "$out"/cg.out* | head -1)
callgrind_annotate "$f" 2>/dev/null | awk -v n="$N" '/PROGRAM TOTALS/ { t = $1; gsub(",", "", t); printf "Redis instructions per call: %.0f\n", t / n }'
