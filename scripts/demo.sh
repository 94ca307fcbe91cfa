#!/usr/bin/env bash
# `make demo`: tideq at work from Rust, Python, Node and the command line, on one Redis, which is
# then kept, with the dashboard, until Ctrl-C so there is something to look at.
#   1. builds what it needs (release; the first time takes a few minutes), behind one progress
#      line (the full output goes to target/demo-build.log);
#   2. starts a private redis-server on a free port, unless TIDEQ_REDIS_URL is set;
#   3. runs the Rust demo (a capped grouped queue of game events, then a job queue of orders
#      with delays, retries and dead letters), then Python enqueues tasks that a Node worker
#      runs, then `tideq worker` runs Python tasks in two supervised, recycled processes, then
#      `tideq stats` and `tideq jobs` show the result;
#   4. starts `tideq dashboard` and prints where to look, until Ctrl-C (`--no-keep`: stop here).
# `--smoke` (`make demo SMOKE=1`, in `make test`): no build, the debug binaries and the bindings
# `make test` built; the dashboard is started, asked for its overview once, and stopped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
KEEP=1
SMOKE=""
[ "${1:-}" = "--no-keep" ] && KEEP=""
[ "${1:-}" = "--smoke" ] && SMOKE=1
bash scripts/ensure-deps.sh >/dev/null

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "${REDIS_DIR:-}" ] && rm -rf "$REDIS_DIR"
}
trap cleanup EXIT
trap 'echo; exit 0' INT TERM

# 1. The build, behind one line that says what and for how long.
LOG="$CARGO_TARGET_DIR/demo-build.log"
mkdir -p "$CARGO_TARGET_DIR"
build() {
  cargo build --release -p tideq --example demo
  cargo build --release -p tideq-cli
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2"
  VIRTUAL_ENV="$ROOT/.venv" .venv/bin/maturin develop --release --quiet
  npm install --no-audit --no-fund
  npm run --silent build
}
if [ -n "$SMOKE" ]; then
  PROFILE=debug
  cargo build -q -p tideq --example demo
  cargo build -q -p tideq-cli
else
PROFILE=release
build >"$LOG" 2>&1 &
BUILD=$!
start=$SECONDS
while kill -0 "$BUILD" 2>/dev/null; do
  if [ -t 1 ]; then
    printf '\r\033[Kbuilding tideq: the Rust core and command, the Python and Node packages (%ds; log: %s)' \
      $((SECONDS - start)) "${LOG#"$ROOT"/}"
  fi
  sleep 1
done
if ! wait "$BUILD"; then
  [ -t 1 ] && printf '\r\033[K'
  echo "the build failed; the end of ${LOG#"$ROOT"/}:" >&2
  tail -30 "$LOG" >&2
  exit 1
fi
[ -t 1 ] && printf '\r\033[K'
echo "built in $((SECONDS - start)) s (log: ${LOG#"$ROOT"/})"
fi
TIDEQ="$CARGO_TARGET_DIR/$PROFILE/tideq"

# 2. The Redis: the one TIDEQ_REDIS_URL names, or a private one.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
if [ -z "${TIDEQ_REDIS_URL:-}" ]; then
  REDIS_PORT="$(free_port)"
  REDIS_DIR="$(mktemp -d)"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$REDIS_DIR" \
    >"$REDIS_DIR/redis.log" 2>&1 &
  PIDS+=($!)
  export TIDEQ_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do sleep 0.1; done
  echo "started a private redis-server at $TIDEQ_REDIS_URL"
fi

# 3. Each runtime at work.
echo
echo "== Rust: a capped grouped queue, then a job queue (core/examples/demo.rs)"
"$CARGO_TARGET_DIR/$PROFILE/examples/demo"

echo
echo "== Python enqueues 20 'charge' tasks on the queue demo-orders"
.venv/bin/python - <<'PY'
import tideq

q = tideq.Queue("demo-orders", max_attempts=3, backoff=tideq.Backoff.fixed(0.2))
for order in range(1, 21):
    q.enqueue_task("charge", {"order": order, "cents": 250 * order}, id=f"order-{order}")
print("enqueued:", q.stats().ready, "ready")
PY

echo
echo "== a Node worker runs them (the same jobs: one format, one set of scripts)"
node --input-type=module - <<'JS'
import { Queue } from 'tideq';

const q = new Queue('demo-orders');
let cents = 0;
const stats = await q.run({
  charge: (data) => {
    cents += data.cents;
    if (data.order === 7) throw new Error('card declined'); // retried, then dead-lettered
    return { charged: data.cents };
  },
}, { concurrency: 4, stopWhenDrained: true });
console.log(`completed ${stats.completed}, failed attempts ${stats.failed}`);
JS

echo
echo "== tideq worker: 2 supervised Python worker processes, each recycled after 15 jobs"
WORK_DIR="$(mktemp -d)"
cat >"$WORK_DIR/demo_tasks.py" <<'PY'
import tideq

queue = tideq.Queue("demo-resize")


@queue.task
def resize(image: int) -> str:
    return f"image-{image}.png resized"
PY
PYTHONPATH="$WORK_DIR" .venv/bin/python -c '
from demo_tasks import resize
for i in range(40):
    resize.enqueue(i)
'
(cd "$WORK_DIR" && exec "$ROOT/.venv/bin/tideq" worker demo_tasks:queue --processes 2 \
  --concurrency 4 --max-jobs-per-process 15 --shutdown-grace 5) &
WORKER=$!
PIDS+=("$WORKER")
until "$TIDEQ" stats demo-resize --json | grep -q '"completed": *40'; do sleep 0.2; done
kill -TERM "$WORKER"
wait "$WORKER"
rm -rf "$WORK_DIR"
echo "tideq worker: 40 of 40 completed; SIGTERM stopped it (exit 0)"

echo
echo "== the command line: tideq stats demo-orders"
"$TIDEQ" stats demo-orders
echo
echo "== tideq dead demo-orders list"
"$TIDEQ" dead demo-orders list

[ -z "$KEEP" ] && exit 0

# 4. Something to look at.
DASH_PORT="$(free_port)"
"$TIDEQ" dashboard --listen "127.0.0.1:$DASH_PORT" >/dev/null 2>&1 &
PIDS+=($!)
if [ -n "$SMOKE" ]; then
  for _ in $(seq 200); do
    curl -fsS -o /dev/null "http://127.0.0.1:$DASH_PORT/api/overview" 2>/dev/null && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$DASH_PORT/api/overview" | grep -q '"demo-orders"'
  echo "the dashboard answered at http://127.0.0.1:$DASH_PORT/ (smoke run: stopping)"
  exit 0
fi
cat <<EOF

tideq's demo is done; its Redis stays up until Ctrl-C:
  Redis:      $TIDEQ_REDIS_URL
  dashboard:  http://127.0.0.1:$DASH_PORT/
  look:       ${TIDEQ#"$ROOT"/} --url $TIDEQ_REDIS_URL queues
              ${TIDEQ#"$ROOT"/} --url $TIDEQ_REDIS_URL jobs demo-orders completed
Ctrl-C stops the dashboard${REDIS_DIR:+ and the Redis}.
EOF
wait
