"""Job-queue benchmark: tideq from Rust, Node and Python beside BullMQ (Node), BullMQ's Python
port, arq, Celery (Redis broker) and RQ, on one private redis-server, with ratios tideq/peer and the issue's targets.

Usage (from the repo root; any Python >= 3.9 runs this file):
    .venv/bin/python bench/jobs/run.py            # N = 20000
    .venv/bin/python bench/jobs/run.py --quick    # N = 2000, a smoke run
    .venv/bin/python bench/jobs/run.py --n 50000 --only rust,bullmq-node --repeat 2

Each library has its own script taking `URL N` and printing one JSON line (see their headers):
bench/src/bin/jobs/, bench/jobs/{tideq_node,bullmq_node}.mjs,
bench/jobs/{tideq_py,bullmq_py,arq_py,celery_py,rq_py}.py. The peers are bench-only installs made
here on first use: `npm install --prefix bench/jobs` (bullmq, ioredis) and a virtualenv each for
the Python peers, bench/jobs/.venv (bullmq), .venv-arq (arq: it pins redis<6, bullmq needs
>=6.2), .venv-celery and .venv-rq.
They are never dependencies of tideq. A tideq binding that is not built is skipped with a message
(build: scripts/test-node.sh, scripts/test-python.sh). The server is flushed between scripts, and
nothing but the script under test is connected while it runs. The raw JSON goes to
bench/jobs/last-run.json.

Delayed-job lateness (benchlib.py / benchlib.mjs describe it; every script does the same): 2 000
jobs on a fresh queue, worker concurrency 100, job i due at start + i * spread / 2 000 (start ~2 s
ahead), each job carrying its due ms in its payload; lateness = handler start - that job's own due
time (ms, local clock).
- lateness_p50_ms / lateness_p99_ms / lateness_min_ms: spread 1 s, the issue's "2 000 jobs due in
  the same second" (the target, p99 <= 5 ms, is on this one; min is the first pickup).
- burst_p50_ms / burst_p99_ms: spread 0, all 2 000 due at one instant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCRIPT_TIMEOUT = 1800

# (key, runtime, lib)
RUNS = [
    ("rust", "rust", "tideq"),
    ("tideq-node", "node", "tideq"),
    ("bullmq-node", "node", "bullmq"),
    ("tideq-py", "python", "tideq"),
    ("bullmq-py", "python", "bullmq-py"),
    ("arq", "python", "arq"),
    ("celery", "python", "celery"),
    ("rq", "python", "rq"),
]

METRICS = [
    # key, label, unit, higher_is_better
    ("enqueue_seq", "enqueue one by one", "jobs/s", True),
    ("enqueue_bulk", "bulk enqueue", "jobs/s", True),
    ("work_c1", "process, concurrency 1", "jobs/s", True),
    ("work_c10", "process, concurrency 10", "jobs/s", True),
    ("work_c100", "process, concurrency 100", "jobs/s", True),
    ("work_prio_c100", "process, priorities 1-10, c=100", "jobs/s", True),
    ("work_groups1k_c100", "process, 1,000 groups, c=100", "jobs/s", True),
    ("work_groups100k_c100", "process, 100,000 groups, c=100", "jobs/s", True),
    ("rate1000_achieved", "rate limit 1000/s: starts/s achieved", "/s", True),
    ("rate1000_max_window", "rate limit 1000/s: most in a 1-s window", "starts", False),
    ("lateness_p50_ms", "delayed lateness p50 (2000 due within 1 s)", "ms", False),
    ("lateness_p99_ms", "delayed lateness p99 (2000 due within 1 s)", "ms", False),
    ("burst_p50_ms", "delayed lateness p50 (2000 due at one instant)", "ms", False),
    ("burst_p99_ms", "delayed lateness p99 (2000 due at one instant)", "ms", False),
    ("lateness_min_ms", "delayed, first pickup", "ms", False),
    ("start_p50_ms", "enqueue to start p50 (1,000/s, idle worker c=10)", "ms", False),
    ("start_p99_ms", "enqueue to start p99 (1,000/s, idle worker c=10)", "ms", False),
    ("idle_cmds_per_s", "idle worker: Redis calls", "/s", False),
    ("idle_client_cmds_per_s", "idle worker: round trips", "/s", False),
    ("rss_mb", "bench process RSS (producer and worker)", "MB", False),
    ("worker_rss_mb", "worker-only process, c=100: peak RSS", "MB", False),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- peers ----------------------------------------------------------------------------------


def ensure_node_peers() -> str | None:
    if (HERE / "node_modules" / "bullmq").is_dir() and (HERE / "node_modules" / "ioredis").is_dir():
        return None
    if not shutil.which("npm"):
        return "npm not found"
    log("installing the Node peers (npm install --prefix bench/jobs)")
    r = subprocess.run(["npm", "install", "--prefix", str(HERE), "--no-audit", "--no-fund"],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else f"npm install failed: {r.stderr.strip()[-500:]}"


def ensure_venv(venv: Path, requirements: Path) -> str | None:
    py = venv / "bin" / "python"
    stamp = venv / ".installed"
    if py.exists() and stamp.exists() and stamp.read_text() == requirements.read_text():
        return None
    log(f"installing {requirements.name} into {venv.relative_to(ROOT)}")
    base = "python3" if shutil.which("python3") else sys.executable
    for cmd in ([base, "-m", "venv", str(venv)],
                [str(py), "-m", "pip", "install", "-q", "-r", str(requirements)]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return f"{' '.join(cmd[:3])} failed: {(r.stderr or r.stdout).strip()[-500:]}"
    stamp.write_text(requirements.read_text())
    return None


# ---- tideq builds ---------------------------------------------------------------------------


def root_python() -> Path:
    return ROOT / ".venv" / "bin" / "python"


def tideq_node_missing() -> str | None:
    r = subprocess.run(["node", "-e", "if (typeof require('./lib/index.js').Queue !== 'function') process.exit(3)"],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        return "the Node binding with Queue is not built (bash scripts/test-node.sh builds it)"
    return None


def tideq_py_missing() -> str | None:
    py = root_python()
    if not py.exists():
        return "no .venv at the repo root (bash scripts/test-python.sh makes it)"
    r = subprocess.run([str(py), "-c", "import tideq; tideq.Queue; tideq.AsyncQueue"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "the Python binding with Queue is not installed in .venv (bash scripts/test-python.sh)"
    return None


def command(key: str, url: str, n: int) -> tuple[list[str] | None, str | None]:
    """The command running one script, or why it cannot run."""
    if key == "rust":
        if not shutil.which("cargo"):
            return None, "cargo not found"
        return ["cargo", "run", "--release", "-q", "-p", "tideq-bench", "--bin", "jobs", "--", url, str(n)], None
    if key == "tideq-node":
        why = tideq_node_missing()
        return (None, why) if why else (["node", str(HERE / "tideq_node.mjs"), url, str(n)], None)
    if key == "bullmq-node":
        why = ensure_node_peers()
        return (None, why) if why else (["node", str(HERE / "bullmq_node.mjs"), url, str(n)], None)
    if key == "tideq-py":
        why = tideq_py_missing()
        return (None, why) if why else ([str(root_python()), str(HERE / "tideq_py.py"), url, str(n)], None)
    if key == "bullmq-py":
        why = ensure_venv(HERE / ".venv", HERE / "requirements.txt")
        return (None, why) if why else ([str(HERE / ".venv/bin/python"), str(HERE / "bullmq_py.py"), url, str(n)], None)
    if key == "arq":
        why = ensure_venv(HERE / ".venv-arq", HERE / "requirements-arq.txt")
        return (None, why) if why else ([str(HERE / ".venv-arq/bin/python"), str(HERE / "arq_py.py"), url, str(n)], None)
    if key in ("celery", "rq"):
        why = ensure_venv(HERE / f".venv-{key}", HERE / f"requirements-{key}.txt")
        return (None, why) if why else ([str(HERE / f".venv-{key}/bin/python"), str(HERE / f"{key}_py.py"), url, str(n)], None)
    raise ValueError(key)


# ---- redis ----------------------------------------------------------------------------------


class Redis:
    def __init__(self) -> None:
        if not shutil.which("redis-server"):
            sys.exit("redis-server not found (bash scripts/ensure-deps.sh installs it)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir = tempfile.mkdtemp(prefix="tideq-jobs-bench-")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"redis://127.0.0.1:{self.port}"
        deadline = time.time() + 10
        while True:
            try:
                if self.cmd("PING") == "PONG":
                    break
            except OSError:
                pass
            if time.time() > deadline:
                self.stop()
                sys.exit("redis-server did not start")
            time.sleep(0.05)

    def cmd(self, *args: str) -> str:
        """One command on a short-lived connection (nothing stays connected between scripts)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"".join([f"*{len(args)}\r\n".encode()]
                               + [b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args]))
            buf = b""
            while b"\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("closed")
                buf += chunk
            head, rest = buf.split(b"\r\n", 1)
            if head[:1] == b"$":
                size = int(head[1:])
                while len(rest) < size + 2:
                    rest += s.recv(65536)
                return rest[:size].decode()
            if head[:1] == b"-":
                raise RuntimeError(head[1:].decode())
            return head[1:].decode()

    def version(self) -> str:
        for line in self.cmd("INFO", "server").splitlines():
            if line.startswith("redis_version:"):
                return line.split(":", 1)[1].strip()
        return "?"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def ceiling(port: int) -> dict[str, float]:
    """redis-benchmark on the same server: PING round trips, 50 clients, -P 1 and -P 64."""
    out: dict[str, float] = {}
    if not shutil.which("redis-benchmark"):
        return out
    for p, n in ((1, 100_000), (64, 1_000_000)):
        r = subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-c", "50", "-n", str(n), "-P", str(p),
                            "-t", "ping_mbulk"], capture_output=True, text=True)
        for seg in r.stdout.replace("\r", "\n").splitlines():
            if "requests per second" in seg:
                try:
                    out[f"P{p}"] = float(seg.split(":")[1].split()[0])
                except (IndexError, ValueError):
                    pass
    return out


# ---- running --------------------------------------------------------------------------------


def run_one(key: str, redis: Redis, n: int) -> tuple[dict | None, str | None]:
    cmd, why = command(key, redis.url, n)
    if cmd is None:
        return None, why
    redis.cmd("FLUSHALL")
    load = os.getloadavg()[0]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {SCRIPT_TIMEOUT} s"
    for line in r.stderr.splitlines():
        if line.strip():
            log(f"  [{key}] {line}")
    if r.returncode != 0:
        return None, f"exit {r.returncode}"
    for line in reversed(r.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                continue
            res["seconds"] = round(time.time() - t0, 1)
            res["load_before"] = round(load, 2)
            return res, None
    return None, f"no JSON line in its output: {r.stdout[-300:]!r}"


def merge_best(a: dict | None, b: dict) -> dict:
    """Best of repeated runs, metric by metric (the same rule for every library)."""
    if a is None:
        return b
    out = dict(b)
    for key, _, _, higher in METRICS:
        if key in a and key in b and isinstance(a[key], (int, float)) and isinstance(b[key], (int, float)):
            out[key] = max(a[key], b[key]) if higher else min(a[key], b[key])
    if (a.get("work_c100") or 0) > (b.get("work_c100") or 0):
        for key in ("diag", "variant", "both", "load_before"):
            if key in a:
                out[key] = a[key]
    out["passes"] = a.get("passes", 1) + 1
    return out


def fmt(v: object, unit: str = "") -> str:
    if not isinstance(v, (int, float)):
        return "-"
    if unit == "jobs/s" or (isinstance(v, (int, float)) and abs(v) >= 1000):
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def ratio(a: object, b: object) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return a / b
    return None


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else (f"{x:.1f}x" if x >= 10 else f"{x:.2f}x")


def report(results: dict[str, dict], skipped: dict[str, str], n: int, ceil: dict[str, float],
           repeat: int) -> None:
    cols = [k for k, _, _ in RUNS if k in results]
    names = {k: f"{rt}/{lib}" for k, rt, lib in RUNS}
    w = 18
    lw = max(28, max(len(label) for _, label, _, _ in METRICS) + 2)
    print(f"\njob queue benchmark: N = {n} jobs per enqueue/process run, one private redis-server"
          + (f"; best of {repeat} passes per metric" if repeat > 1 else ""))
    if ceil:
        print("redis-benchmark PING on the same server, 50 clients: "
              + "   ".join(f"-{k[0]} {k[1:]}: {v:,.0f}/s" for k, v in ceil.items()))
    print()
    print(f"{'metric':<{lw}}{'unit':<8}" + "".join(f"{names[c]:>{w}}" for c in cols))
    for key, label, unit, _ in METRICS:
        print(f"{label:<{lw}}{unit:<8}" + "".join(f"{fmt(results[c].get(key), unit):>{w}}" for c in cols))
    for key, why in skipped.items():
        print(f"  ({names[key]} not run: {why})")
    capped = {c: results[c].get("capped") for c in cols if results[c].get("capped")}
    for c, what in capped.items():
        print(f"  ({names[c]}: {', '.join(what)} stopped after 30 s; jobs/s over the jobs done by then)")
    py = results.get("tideq-py", {})
    if py.get("variant"):
        print(f"  (python/tideq API used per measurement: {py['variant']})")

    pairs = [("tideq-node", "bullmq-node", "node: tideq/BullMQ"),
             ("tideq-py", "bullmq-py", "python: tideq/bullmq-py"),
             ("tideq-py", "arq", "python: tideq/arq"),
             ("tideq-py", "celery", "python: tideq/Celery"),
             ("tideq-py", "rq", "python: tideq/RQ"),
             ("rust", "bullmq-node", "rust tideq/BullMQ(node)")]
    pairs = [p for p in pairs if p[0] in results and p[1] in results]
    if pairs:
        print("\nratios tideq/peer (jobs/s: higher is better; lateness, idle, RSS: lower is better)")
        rw = max(36, lw)
        print(f"{'metric':<{rw}}" + "".join(f"{p[2]:>26}" for p in pairs))
        for key, label, unit, _ in METRICS:
            print(f"{label:<{rw}}" + "".join(
                f"{fmt_ratio(ratio(results[a].get(key), results[b].get(key))):>26}" for a, b, _ in pairs))

    diag_rows = []
    for c in cols:
        for run, d in (results[c].get("diag") or {}).items():
            diag_rows.append((names[c], run, d))
    if diag_rows:
        print("\nwhere the time goes in the process runs (Redis/client CPU in cores busy; Redis us and calls per job;"
              " calls include commands run inside scripts)" + ("; from the pass with the best c=100" if repeat > 1 else ""))
        print(f"{'lib':<18}{'run':<16}{'redis cpu':>10}{'client cpu':>11}{'redis us/job':>13}{'calls/job':>10}{'scripts/job':>12}")
        for name, run, d in diag_rows:
            print(f"{name:<18}{run:<16}{d.get('redis_cpu', 0):>10.2f}{d.get('client_cpu', 0):>11.2f}"
                  f"{d.get('redis_us_per_job', 0):>13.1f}{d.get('calls_per_job', 0):>10.2f}{d.get('scripts_per_job', 0):>12.3f}")
    idle_rows = [(names[c], results[c].get("idle_detail")) for c in cols if results[c].get("idle_detail")]
    if idle_rows:
        print(f"\nidle worker, {os.environ.get('JOBS_BENCH_IDLE_S', '5')} s: commands sent by clients | every call Redis ran (script-internal included)")
        for name, d in idle_rows:
            print(f"  {name:<18}{d.get('client')} | {d.get('commandstats')}")

    print("\ntargets")
    rows = []

    def target(label: str, value: float | None, goal: str, ok: bool | None) -> None:
        v = "-" if value is None else (f"{value:,.0f}" if value >= 1000 else f"{value:.2f}")
        rows.append((label, v, goal, "n/a" if ok is None else ("PASS" if ok else "MISS")))

    def get(k: str, m: str) -> float | None:
        v = results.get(k, {}).get(m)
        return v if isinstance(v, (int, float)) else None

    # Single-call latency: one job at a time, against BullMQ (Node) measured in this run.
    for k in ("tideq-node", "rust", "tideq-py"):
        for m, what in (("enqueue_seq", "enqueue one by one"), ("work_c1", "process c=1")):
            r = ratio(get(k, m), get("bullmq-node", m))
            target(f"{what} vs BullMQ, {names[k]}", r, ">= 1.3x", None if r is None else r >= 1.3)
    # Redis work per job.
    for k in ("rust", "tideq-node", "tideq-py"):
        dd = results.get(k, {}).get("diag") or {}
        c1 = dd.get("c1") or dd.get("blocking_c1") or {}
        v = c1.get("redis_us_per_job")
        target(f"Redis CPU per job, c=1, {names[k]}", v, "<= 35 us", None if v is None else v <= 35)
        v = c1.get("calls_per_job")
        target(f"Redis calls per job, c=1, {names[k]}", v, "<= 8", None if v is None else v <= 8)
    d = results.get("rust", {}).get("diag") or {}
    us100 = (d.get("c100") or {}).get("redis_us_per_job")
    target("Redis CPU per job, c=100, rust/tideq", us100, "<= 3.5 us", None if us100 is None else us100 <= 3.5)
    # Groups against plain jobs.
    plain = get("rust", "work_c100")
    r = ratio(get("rust", "work_groups1k_c100"), plain)
    target("rust 1,000 groups vs plain, c=100, jobs/s", r, ">= 0.8x", None if r is None else r >= 0.8)
    us = {k: (d.get(k) or {}).get("redis_us_per_job") for k in ("c100", "groups1k_c100", "groups100k_c100")}
    r = ratio(us["groups1k_c100"], us["c100"])
    target("rust 1,000 groups: Redis CPU per job vs plain", r, "<= 1.3x", None if r is None else r <= 1.3)
    r = ratio(us["groups100k_c100"], us["groups1k_c100"])
    target("rust 100,000 groups vs 1,000: Redis CPU per job", r, "flat (<= 1.3x)", None if r is None else r <= 1.3)
    # A burst's last job starts no sooner than 2,000 jobs / the worker's c=100 rate (its floor).
    for k in ("rust", "tideq-node", "tideq-py"):
        v, w = get(k, "burst_p99_ms"), get(k, "work_c100")
        r = ratio(v, 0.99 * 2000 / w * 1000) if w else None
        target(f"delayed burst p99 vs its floor (1980 jobs / c=100 rate), {names[k]}", r, "<= 1.2x",
               None if r is None else r <= 1.2)
    # Enqueue to start, an idle worker.
    for k in ("rust", "tideq-node", "tideq-py", "bullmq-node"):
        v = get(k, "start_p50_ms")
        target(f"enqueue to start p50, {names[k]}", v, "< 1 ms" if k != "bullmq-node" else "(peer)",
               None if v is None or k == "bullmq-node" else v < 1)
        v = get(k, "start_p99_ms")
        target(f"enqueue to start p99, {names[k]}", v, "< 5 ms" if k != "bullmq-node" else "(peer)",
               None if v is None or k == "bullmq-node" else v < 5)
    r = ratio(get("tideq-node", "enqueue_bulk"), get("bullmq-node", "enqueue_bulk"))
    target("bulk enqueue: node enqueueMany vs BullMQ addBulk", r, ">= 6x", None if r is None else r >= 6)
    # Kept from earlier rounds, so they do not slip.
    for k, most in (("rust", 20), ("tideq-node", 120), ("tideq-py", 60)):
        v = get(k, "worker_rss_mb")
        target(f"worker RSS at c=100, {names[k]}", v, f"<= {most} MB", None if v is None else v <= most)
    for k in ("rust", "tideq-node", "tideq-py"):
        v = get(k, "idle_cmds_per_s")
        target(f"idle Redis calls/s, {names[k]}", v, "<= 2", None if v is None else v <= 2)
    for k in ("rust", "bullmq-node"):
        v = get(k, "rate1000_max_window")
        target(f"rate limit 1000/s never exceeded, {names[k]}", v, "<= 1000", None if v is None else v <= 1000)
    lw = max(len(r[0]) for r in rows) + 2
    for label, v, goal, verdict in rows:
        print(f"  {label:<{lw}}{v:>10}   {goal:<20}{verdict}")


def tracing_cost(redis: "Redis", n: int) -> None:
    """--tracing: each tideq binding's c=100 worker with tracing off, then on (see the scripts)."""
    print(f"tracing cost: worker at c=100, N = {n}, jobs/s of three runs each (best compared)")
    for key in ("tideq-node", "tideq-py"):
        cmd, why = command(key, redis.url, n)
        if cmd is None:
            print(f"  {key}: skipped: {why}")
            continue
        redis.cmd("FLUSHALL")
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT, cwd=ROOT,
                             env={**os.environ, "JOBS_BENCH_TRACING": "1"})
        if out.returncode != 0:
            print(f"  {key}: failed: {out.stderr.strip()[-2000:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {key:<12} off {r['tracing_off_c100']}  on {r['tracing_on_c100']}  "
              f"on/off {r['tracing_on_vs_off']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 2000 (smoke run)")
    ap.add_argument("--n", type=int, default=None, help="jobs per run (default 20000)")
    ap.add_argument("--only", default="", help="comma list of: " + ",".join(k for k, _, _ in RUNS))
    ap.add_argument("--repeat", type=int, default=1, help="run each script K times, keep the best per metric")
    ap.add_argument("--idle-seconds", type=float, default=5.0, help="idle measurement window (default 5)")
    ap.add_argument("--tracing", action="store_true",
                    help="only the cost of tracing: Node and Python workers at c=100 before and after an "
                         "OpenTelemetry SDK is set up (tideq_node.mjs / tideq_py.py, JOBS_BENCH_TRACING)")
    args = ap.parse_args()
    n = args.n or (2000 if args.quick else 20000)
    os.environ["JOBS_BENCH_IDLE_S"] = str(args.idle_seconds)
    keys = [k for k, _, _ in RUNS]
    if args.only:
        want = [k.strip() for k in args.only.split(",") if k.strip()]
        bad = [k for k in want if k not in keys]
        if bad:
            sys.exit(f"unknown --only entries {bad}; choose from {keys}")
        keys = [k for k in keys if k in want]

    redis = Redis()
    load0 = os.getloadavg()
    log(f"private redis-server {redis.version()} at {redis.url}; {os.cpu_count()} cores; "
        f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    results: dict[str, dict] = {}
    passes: list[dict] = []
    skipped: dict[str, str] = {}
    if args.tracing:
        try:
            tracing_cost(redis, n)
        finally:
            redis.stop()
        return
    try:
        ceil = ceiling(redis.port)
        for rep in range(args.repeat):
            for key in keys:
                if key in skipped:
                    continue
                log(f"running {key} (N={n}{f', pass {rep + 1}/{args.repeat}' if args.repeat > 1 else ''})")
                res, why = run_one(key, redis, n)
                if res is None:
                    log(f"  {key}: skipped: {why}")
                    if rep == 0 and key not in results:
                        skipped[key] = why or "?"
                    continue
                log(f"  {key}: done in {res['seconds']} s (load average before: {res['load_before']})")
                passes.append(res)
                results[key] = merge_best(results.get(key), res)
    finally:
        redis.stop()
    load1 = os.getloadavg()
    (HERE / "last-run.json").write_text(json.dumps(
        {"n": n, "ceiling": ceil, "load_before": load0, "load_after": load1, "results": results,
         "passes": passes, "skipped": skipped}, indent=1))
    report(results, skipped, n, ceil, args.repeat)
    print(f"\nload average before {load0[0]:.2f}, after {load1[0]:.2f} on {os.cpu_count()} cores "
          f"(other work on the machine skews every number)")


if __name__ == "__main__":
    main()
