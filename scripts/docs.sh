#!/usr/bin/env bash
# `make docs`: the documentation site (mkdocs.yml) into target/site, with warnings as errors:
# - the Python reference comes from the package's type stubs (mkdocstrings);
# - the Node.js reference from index.d.ts (TypeDoc, as Markdown pages of the site);
# - the Rust reference from the crate's doc comments (rustdoc, copied beside the site).
# `make test` runs it; scripts/readme.py runs the pages' code blocks.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/docs-requirements.txt
[ -x node_modules/.bin/typedoc ] || npm ci --no-audit --no-fund >/dev/null
rm -rf docs/reference/node
npx --no-install typedoc --logLevel Warn
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
RUSTDOCFLAGS="-D warnings" cargo doc -q -p tideq --no-deps --features opentelemetry
mkdir -p target/site/reference/rust
cp -r "$CARGO_TARGET_DIR/doc/." target/site/reference/rust/
echo "docs: target/site/index.html"
