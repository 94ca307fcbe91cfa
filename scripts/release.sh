#!/usr/bin/env bash
# `make release`: every artefact a release publishes for the platform this machine builds (Linux
# x86_64, glibc), in dist/. Linked against glibc 2.17 with zig (so they load on manylinux2014
# systems and later); the other platforms are built by .github/workflows/release.yml.
#   tideq-VERSION-cp39-abi3-manylinux2014_x86_64*.whl  the Python wheel (abi3: CPython 3.9 and later)
#   tideq-VERSION.tar.gz                               the Python sdist (builds with Rust)
#   tideq-VERSION.tgz                                  npm: the main package (JavaScript, types, bin)
#   tideq-tideq-linux-x64-gnu-VERSION.tgz              npm: @tideq/tideq-linux-x64-gnu, its addon
#   tideq-cli-VERSION-x86_64-unknown-linux-gnu.tar.gz  the `tideq` command, standalone
#   tideq-VERSION.crate, tideq-cli-VERSION.crate       the crates (`cargo package`)
#   SHA256SUMS
# `make release-check` then publishes them to local registries and installs them from there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
bash scripts/ensure-deps.sh >/dev/null
python3 scripts/set-version.py --check >/dev/null
VERSION="$(node -p 'require("./package.json").version')"
TRIPLE=x86_64-unknown-linux-gnu
GLIBC=2.17

[ -x .venv/bin/python ] || python3 -m venv .venv
# zig (from PyPI's ziglang) links against an old glibc; cargo-zigbuild drives it for cargo
# builds (maturin has the same built in); auditwheel checks the wheel's platform tag.
.venv/bin/python -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2" ziglang cargo-zigbuild auditwheel
export PATH="$ROOT/.venv/bin:$PATH"
[ -x node_modules/.bin/napi ] || npm install --no-audit --no-fund --silent

rm -rf dist && mkdir -p dist
echo "== the Python wheel (abi3, manylinux2014) and sdist"
maturin build --release --quiet --zig --compatibility manylinux2014 --out dist
WHEEL="$(ls dist/tideq-"$VERSION"-*.whl)"
auditwheel show "$WHEEL" > target/auditwheel.txt
grep -q '"manylinux_2_17_x86_64"' target/auditwheel.txt || {
  cat target/auditwheel.txt >&2; echo "the wheel is not manylinux2014 (manylinux_2_17)" >&2; exit 1; }
maturin sdist --out dist >target/sdist.log 2>&1 || { cat target/sdist.log >&2; exit 1; }

echo "== the Node addon and the tideq command (glibc $GLIBC)"
cargo zigbuild --release --quiet -p tideq-node -p tideq-cli --target "$TRIPLE.$GLIBC"
BUILT="$CARGO_TARGET_DIR/$TRIPLE/release"
# The newest glibc symbol version each binary needs: at most $GLIBC.
for bin in "$BUILT/libtideq_node.so" "$BUILT/tideq"; do
  need="$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
  if [ "$(printf '%s\n%s\n' "$need" "$GLIBC" | sort -V | tail -1)" != "$GLIBC" ]; then
    echo "$bin needs glibc $need, more than $GLIBC" >&2
    exit 1
  fi
done
ADDONS="$CARGO_TARGET_DIR/release-addons"
rm -rf "$ADDONS" && mkdir -p "$ADDONS"
cp "$BUILT/libtideq_node.so" "$ADDONS/tideq.linux-x64-gnu.node"
node scripts/npm-packages.mjs --out dist "$ADDONS/tideq.linux-x64-gnu.node" >/dev/null
rm -rf dist/stage

echo "== the tideq command, standalone"
CLI="$CARGO_TARGET_DIR/release-cli/tideq-cli-$VERSION-$TRIPLE"
rm -rf "$(dirname "$CLI")" && mkdir -p "$CLI"
cp "$BUILT/tideq" README.md LICENSE CHANGELOG.md "$CLI/"
tar -czf "dist/tideq-cli-$VERSION-$TRIPLE.tar.gz" -C "$(dirname "$CLI")" "$(basename "$CLI")"

echo "== the crates (cargo package builds each from its packaged sources)"
# --allow-dirty: a release is tagged from a clean tree (the workflow publishes from one); here the
# check also runs on work in progress.
cargo package --quiet --allow-dirty -p tideq -p tideq-cli
cp "$CARGO_TARGET_DIR/package/tideq-$VERSION.crate" "$CARGO_TARGET_DIR/package/tideq-cli-$VERSION.crate" dist/

(cd dist && sha256sum -- * > SHA256SUMS)
echo "== dist/ (version $VERSION)"
ls -l dist | tail -n +2 | awk '{ printf "%10.1f KB  %s\n", $5 / 1024, $9 }'
