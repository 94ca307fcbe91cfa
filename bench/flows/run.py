"""Flow fan-in benchmark: one parent waiting for N children (10,000 by default), tideq
(bench/src/bin/flows.rs, the children on a queue of 4 shards) beside BullMQ's FlowProducer
(bench/flows/bullmq_flow.mjs), on one private redis-server, printed side by side with the ratios.

Usage: .venv/bin/python bench/flows/run.py [--n 10000] [--repeat 3]   (or `make bench-flows`)

Each side runs --repeat times (a fresh queue each time) and its median is shown. Measured per run:
the enqueue of the whole flow, the children's run rate (one worker at concurrency 100), the time
from the end of the last child's handler to the start of the parent's, the Redis calls per child
(INFO commandstats: every call, script-internal ones included), and that the parent read every
child's result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench" / "jobs"))
from run import Redis, ensure_node_peers  # noqa: E402

FIELDS = [
    ("enqueue_ms", "enqueue the flow (ms)", False),
    ("children_per_s", "children run per second", True),
    ("last_child_to_parent_ms", "last child's end -> parent's start (ms)", False),
    ("calls_per_child", "Redis calls per child", False),
    ("parent_results", "children results the parent read", True),
]


def run(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "tideq-bench", "--bin", "flows"],
                   check=True, cwd=ROOT)
    missing = ensure_node_peers()
    redis = Redis()
    try:
        sides = {"tideq": [str(ROOT / "target/release/flows"), redis.url, str(a.n)]}
        if missing is None:
            sides["bullmq"] = ["node", "bench/flows/bullmq_flow.mjs", redis.url, str(a.n)]
        else:
            print(f"BullMQ skipped: {missing}", file=sys.stderr)
        got: dict[str, list[dict]] = {k: [] for k in sides}
        for _ in range(a.repeat):
            for name, cmd in sides.items():
                got[name].append(run(cmd))
        med = {k: {f: statistics.median(r[f] for r in v) for f, _, _ in FIELDS}
               for k, v in got.items()}
        print(f"\nflow fan-in: 1 parent, {a.n} children; median of {a.repeat} runs; "
              f"redis-server {redis.version()}")
        head = f"{'':42} {'tideq':>12} {'bullmq':>12} {'tideq/bullmq':>13}"
        print(head)
        for f, label, higher in FIELDS:
            t = med["tideq"][f]
            b = med.get("bullmq", {}).get(f)
            ratio = "" if not b else f"{t / b:.2f}x"
            bs = "-" if b is None else f"{b:,.2f}"
            print(f"{label:42} {t:>12,.2f} {bs:>12} {ratio:>13}")
        print("(higher is better for the rate and the results; lower for the rest)")
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
