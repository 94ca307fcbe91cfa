#!/usr/bin/env bash
# `make release-check`: a release installs from a registry, in seconds, where there is no Rust.
# Publishes the artefacts to a local PyPI (pypiserver) and a local npm registry (verdaccio), both
# on 127.0.0.1, then, in a fresh virtualenv and a fresh Node project with cargo and rustc off the
# PATH: `pip install tideq` and `npm install tideq` (each timed), the quick start in Python, in
# Node (ES module and CommonJS) and the `tideq` command of each, against a private redis-server.
# Also checks that an install without the platform package fails with an error naming the
# platform.
#   scripts/release-check.sh             dist/ (`make release`)
#   scripts/release-check.sh --from DIR  the artefacts in DIR (the release workflow's install jobs)
#   scripts/release-check.sh --quick     what `make test` built: the wheel in target/wheels and
#                                        the addon at the root, packed by scripts/npm-packages.mjs
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VERSION="$(node -p 'require("./package.json").version')"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  redis-cli -p "${REDIS_PORT:-0}" shutdown nosave >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {  # URL: up to 30 s for a server to answer
  for _ in $(seq 300); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "no answer from $1" >&2; return 1
}
now() { python3 -c 'import time; print(time.time())'; }  # (BSD date has no %N)
took() { python3 -c "print(f'{$(now) - $1:.1f} s')"; }

# The artefacts.
ART="$WORK/artefacts"
mkdir -p "$ART"
# napi's name for this platform (linux-x64-gnu, darwin-arm64, ...): which addon npm must pick.
PLATFORM="$(node -e 'const { platform: p, arch: a } = process; const gnu = process.report.getReport().header.glibcVersionRuntime;
console.log(p === "linux" ? `linux-${a}-${gnu ? "gnu" : "musl"}` : p === "win32" ? `win32-${a}-msvc` : `${p}-${a}`)')"
case "${1:-}" in
  --quick)
    cp target/wheels/tideq-"$VERSION"-*.whl "$ART/"
    node scripts/npm-packages.mjs --out "$ART" "tideq.$PLATFORM.node" >/dev/null
    rm -rf "$ART/stage" ;;
  --from) FROM="$2" ;;
  "") FROM=dist ;;
  *) echo "usage: scripts/release-check.sh [--quick | --from DIR]" >&2; exit 2 ;;
esac
if [ -n "${FROM:-}" ]; then
  cp "$FROM"/tideq-"$VERSION"-*.whl "$FROM"/tideq-"$VERSION".tar.gz "$FROM"/tideq-"$VERSION".tgz "$FROM"/tideq-tideq-*-"$VERSION".tgz "$ART/"
  cp "$FROM"/tideq-cli-"$VERSION"-*.tar.gz "$ART/" 2>/dev/null || true
fi
# The standalone `tideq` command's archive for this platform (Rust's name for it).
case "$PLATFORM" in
  linux-x64-gnu) TRIPLE=x86_64-unknown-linux-gnu ;; linux-arm64-gnu) TRIPLE=aarch64-unknown-linux-gnu ;;
  linux-x64-musl) TRIPLE=x86_64-unknown-linux-musl ;; darwin-x64) TRIPLE=x86_64-apple-darwin ;;
  darwin-arm64) TRIPLE=aarch64-apple-darwin ;; *) TRIPLE=none ;;
esac
CLI_ARCHIVE="$ART/tideq-cli-$VERSION-$TRIPLE.tar.gz"

# The registries' own software, in the repository's virtualenv and target/ (not what is tested).
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check pypiserver twine
REG="$CARGO_TARGET_DIR/registry"
if ! cmp -s scripts/registry/package-lock.json "$REG/package-lock.json"; then
  rm -rf "$REG" && mkdir -p "$REG"
  cp scripts/registry/package.json scripts/registry/package-lock.json "$REG/"
  (cd "$REG" && npm ci --no-audit --no-fund --silent)
fi

echo "== local registries on 127.0.0.1"
PYPI_PORT="$(free_port)"
mkdir -p "$WORK/pypi"
# -a . -P . : uploads without a password (loopback only).
.venv/bin/pypi-server run -i 127.0.0.1 -p "$PYPI_PORT" -a . -P . "$WORK/pypi" >"$WORK/pypi.log" 2>&1 &
PIDS+=($!)
NPM_PORT="$(free_port)"
cat > "$WORK/verdaccio.yaml" <<YAML
storage: $WORK/npm-storage
auth:
  htpasswd:
    file: $WORK/htpasswd
    max_users: -1
# No uplink: the registry holds exactly what is published here.
packages:
  '@tideq/*':
    access: \$all
    publish: \$all
  'tideq':
    access: \$all
    publish: \$all
  '**':
    access: \$all
max_body_size: 200mb
log: { type: stdout, format: pretty, level: warn }
YAML
"$REG/node_modules/.bin/verdaccio" --config "$WORK/verdaccio.yaml" --listen "127.0.0.1:$NPM_PORT" >"$WORK/verdaccio.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$PYPI_PORT/"
wait_http "http://127.0.0.1:$NPM_PORT/-/ping"
NPM_REGISTRY="http://127.0.0.1:$NPM_PORT/"
# An npm configuration of its own: this registry, an anonymous token (verdaccio lets anyone
# publish these packages; npm will not publish without a token), a fresh cache.
NPMRC="$WORK/npmrc"
printf 'registry=%s\n//127.0.0.1:%s/:_authToken=local\ncache=%s\nfund=false\naudit=false\nupdate-notifier=false\n' \
  "$NPM_REGISTRY" "$NPM_PORT" "$WORK/npm-cache" > "$NPMRC"

echo "== publish"
.venv/bin/twine upload --disable-progress-bar --non-interactive --repository-url "http://127.0.0.1:$PYPI_PORT/" \
  -u local -p local $(ls "$ART"/tideq-"$VERSION"-*.whl "$ART"/tideq-"$VERSION".tar.gz 2>/dev/null) >/dev/null
ls "$WORK/pypi"
for tgz in "$ART"/tideq-tideq-*.tgz "$ART/tideq-$VERSION.tgz"; do
  NPM_CONFIG_USERCONFIG="$NPMRC" npm publish --silent --access public "$tgz"
  echo "published $(basename "$tgz")"
done

# Where the user is: no cargo or rustc on PATH, no pip configuration of this machine's.
PATH_NOCARGO="/usr/local/bin:/usr/bin:/bin:$(dirname "$(command -v node)")"
export REDIS_PORT="$(free_port)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" --daemonize yes >/dev/null
user() {
  env -i PATH="$PATH_NOCARGO" HOME="$WORK/home" TIDEQ_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" \
    PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NPM_CONFIG_USERCONFIG="$NPMRC" "$@"
}
mkdir -p "$WORK/home"
for tool in cargo rustc; do
  if user sh -c "command -v $tool" >/dev/null; then echo "$tool is on the user's PATH" >&2; exit 1; fi
done

echo "== pip install tideq (fresh virtualenv)"
python3 -m venv "$WORK/venv"
t0="$(now)"
user "$WORK/venv/bin/pip" install --quiet --index-url "http://127.0.0.1:$PYPI_PORT/simple/" tideq
PIP_TIME="$(took "$t0")"
echo "pip install tideq: $PIP_TIME"
cat > "$WORK/quickstart.py" <<'PY'
import tideq

queue = tideq.Queue("release-check-py")


@queue.task(name="send-welcome")
def send_welcome(to: str) -> str:
    print("sending welcome to", to)
    return f"welcomed {to}"


queue.enqueue_task("send-welcome", {"to": "ada@example.com"}, id="welcome-ada")
stats = queue.run_tasks(stop_when_drained=True)
assert stats.completed == 1, stats
assert tideq.__version__ == __import__("sys").argv[1], tideq.__version__
print("python: ok")
PY
user "$WORK/venv/bin/python" "$WORK/quickstart.py" "$VERSION"
user "$WORK/venv/bin/tideq" stats release-check-py | grep -q completed
[ "$(user "$WORK/venv/bin/tideq" --version)" = "tideq $VERSION" ] || { echo "tideq --version is not tideq $VERSION" >&2; exit 1; }
echo "the tideq command (pip): ok"

if [ -f "$CLI_ARCHIVE" ]; then
  echo "== the standalone tideq command ($(basename "$CLI_ARCHIVE"))"
  tar -xzf "$CLI_ARCHIVE" -C "$WORK"
  CLI="$WORK/tideq-cli-$VERSION-$TRIPLE/tideq"
  [ "$(user "$CLI" --version)" = "tideq $VERSION" ] || { echo "$CLI --version is not tideq $VERSION" >&2; exit 1; }
  user "$CLI" stats release-check-py | grep -q completed
  echo "the standalone tideq command: ok"
fi

echo "== npm install tideq (fresh Node project)"
mkdir -p "$WORK/app"
cd "$WORK/app"
user npm init -y >/dev/null
t0="$(now)"
user npm install --silent tideq
NPM_TIME="$(took "$t0")"
echo "npm install tideq: $NPM_TIME"
[ -L node_modules/tideq ] && { echo "node_modules/tideq is a link, not an installed package" >&2; exit 1; }
node -e 'const p = require("./node_modules/tideq/package.json"); if (p.scripts) { console.error("the published package has scripts:", p.scripts); process.exit(1) }'
[ -d "node_modules/@tideq/tideq-$PLATFORM" ] || { echo "npm did not install @tideq/tideq-$PLATFORM" >&2; ls node_modules/@tideq >&2; exit 1; }
echo "installed: tideq, @tideq/tideq-$PLATFORM"
cat > quickstart.mjs <<'JS'
import { Queue } from 'tideq';

const queue = new Queue('release-check-node');
await queue.enqueueTask('send-welcome', { to: 'ada@example.com' }, { id: 'welcome-ada' });
const stats = await queue.run({ 'send-welcome': (data) => console.log('sending welcome to', data.to) }, { stopWhenDrained: true });
if (stats.completed !== 1) throw new Error(JSON.stringify(stats));
console.log('node (import): ok');
JS
cat > quickstart.cjs <<'JS'
const { Queue } = require('tideq');

new Queue('release-check-node').stats().then((s) => {
  if (s.completed !== 1) throw new Error(JSON.stringify(s));
  console.log('node (require): ok');
});
JS
cat > testing.mjs <<'JS'
import { Queue } from 'tideq';
import { fake } from 'tideq/testing';

const mode = fake();
await new Queue('release-check-testing').enqueueTask('send-welcome', { to: 'ada@example.com' });
mode.assertEnqueued({ task: 'send-welcome', args: { to: 'ada@example.com' } });
mode.stop();
console.log('node (tideq/testing): ok');
JS
user node quickstart.mjs
user node quickstart.cjs
user node testing.mjs
user npx --no-install tideq stats release-check-node | grep -q completed
[ "$(user npx --no-install tideq --version)" = "tideq $VERSION" ] || { echo "npx tideq --version is not tideq $VERSION" >&2; exit 1; }
echo "the tideq command (npm): ok"

echo "== npm install tideq without its platform package (npm/cli#4828): a clear error"
mkdir -p "$WORK/app-without"
cd "$WORK/app-without"
user npm init -y >/dev/null
user npm install --silent --omit=optional tideq
if user node -e 'require("tideq")' 2>"$WORK/err.txt"; then echo "tideq loaded without its addon" >&2; exit 1; fi
for want in "no native addon for this platform ($PLATFORM" "@tideq/tideq-$PLATFORM" "npm/cli/issues/4828" "build the addon from source"; do
  grep -qF "$want" "$WORK/err.txt" || { echo "the error does not say: $want" >&2; cat "$WORK/err.txt" >&2; exit 1; }
done
echo "missing addon: the error names the platform, the package and the fixes"

echo "== installed from the registries in: pip $PIP_TIME, npm $NPM_TIME"
