#!/usr/bin/env bash
# The built artefacts install and run where no Rust toolchain is: the wheel (target/wheels, made
# by scripts/test-python.sh or `make dist`) into a fresh virtualenv, and the npm tarball
# (target/npm, made by scripts/test-node.sh or `make dist`) into a fresh Node project, both with
# cargo off the PATH; each then runs a job through a private redis-server.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" --daemonize yes >/dev/null
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
export TIDEQ_REDIS_URL="redis://127.0.0.1:$PORT"
# A PATH without cargo or rustc: only the system's directories and node's.
NOCARGO="/usr/local/bin:/usr/bin:/bin"
NODE_DIR="$(dirname "$(command -v node)")"
PATH_NOCARGO="$NOCARGO:$NODE_DIR"

echo "== the wheel in a fresh virtualenv"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check "$ROOT"/target/wheels/tideq-*.whl
cat > "$WORK/sample.py" <<'PY'
import tideq

q = tideq.Queue("dist-check")
q.enqueue(b'{"to": "ada@example.com"}', id="welcome")
stats = q.run(lambda job: print("ran", job.id, job.json()["to"]), stop_when_drained=True)
assert stats.completed == 1, stats
print("python wheel: ok")
PY
env -i PATH="$PATH_NOCARGO" HOME="$WORK" TIDEQ_REDIS_URL="$TIDEQ_REDIS_URL" "$WORK/venv/bin/python" "$WORK/sample.py"

echo "== the npm tarball in a fresh Node project"
mkdir "$WORK/app"
cd "$WORK/app"
env -i PATH="$PATH_NOCARGO" HOME="$WORK" npm init -y >/dev/null
env -i PATH="$PATH_NOCARGO" HOME="$WORK" npm install --no-audit --no-fund --silent "$ROOT"/target/npm/tideq-*.tgz
cat > sample.mjs <<'JS'
import { Queue } from 'tideq';

const q = new Queue('dist-check-node');
await q.enqueueTask('send-welcome', { to: 'ada@example.com' }, { id: 'welcome' });
const stats = await q.run({ 'send-welcome': (data, job) => console.log('ran', job.id, data.to) }, { stopWhenDrained: true });
if (stats.completed !== 1) throw new Error(JSON.stringify(stats));
console.log('npm tarball: ok');
JS
env -i PATH="$PATH_NOCARGO" HOME="$WORK" TIDEQ_REDIS_URL="$TIDEQ_REDIS_URL" node sample.mjs
