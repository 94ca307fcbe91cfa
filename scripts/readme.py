"""Runs every code block of README.md as pasted, so a README sample can never drift.

Usage: .venv/bin/python scripts/readme.py [README.md]   (run by `make test`, after the bindings
are built: scripts/test-python.sh and scripts/test-node.sh)

Each fenced block is handled by its language:
- ```python: run with .venv/bin/python, then all of them type-checked with mypy against the stubs.
- ```js: run with node as an ES module from a directory where `tideq` resolves to this checkout
  (as after `npm install /path/to/tideq`).
- ```toml: a Cargo manifest fragment: the [dependencies] of the crate the Rust blocks are built
  in, placed beside a `tideq` directory that is this checkout (so `path = "../tideq/core"` works
  as written).
- ```rust: each a `src/bin/*.rs` of that crate, built once and run.
- ```redis: redis-cli commands, each line run against the private redis-server (an error reply
  fails the block); an `ACL SETUSER <queue>-<role> on >password <rules>` line must give exactly
  the rules `tideq.acl_rules(queue, role)` prints, so the README's ACL lines cannot drift.
- ```sh: commands, not code: each line must be a command the test suite itself runs or a target
  of the Makefile (`make test` cannot run itself), so a renamed target fails here.

Every block runs against a private redis-server on a free loopback port (TIDEQ_REDIS_URL points
at it, and the server is flushed between blocks), must exit with status 0 within 60 s, and must
not write a traceback. A block that fails prints its output and the README line it starts on.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))

# Shell lines a README may show: those the test scripts run themselves.
SHELL_OK = [
    # scripts/release-check.sh installs the published packages so (and `cargo package` checks the
    # crates that `cargo add tideq` and `cargo install tideq-cli` fetch).
    re.compile(r"^pip install tideq$"),
    re.compile(r"^npm install tideq$"),
    re.compile(r"^cargo add tideq$"),
    re.compile(r"^cargo install tideq-cli$"),
    re.compile(r"^pip install \.$"),
    re.compile(r"^npm install$"),
    re.compile(r"^npm run build$"),
    re.compile(r"^npm install /path/to/tideq$"),
    re.compile(r"^cargo install --path \S+$"),
]


class Block:
    def __init__(self, lang: str, line: int, code: str) -> None:
        self.lang, self.line, self.code = lang, line, code

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang})"


def blocks(path: Path) -> list[Block]:
    out, lang, start, lines = [], None, 0, []
    for i, text in enumerate(path.read_text().splitlines(), 1):
        fence = re.match(r"^```(\w*)\s*$", text)
        if fence and lang is None:
            lang, start, lines = fence.group(1) or "text", i, []
        elif fence and lang is not None and fence.group(1) == "":
            out.append(Block(lang, start, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            lines.append(text)
    if lang is not None:
        sys.exit(f"README.md:{start}: unclosed code block")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.cli("PING") == "PONG":
                    return
            except (OSError, subprocess.CalledProcessError):
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def run(block: Block, cmd: list[str], env: dict[str, str], cwd: Path) -> str | None:
    """Runs one block's command; returns an error report, or None."""
    t0 = time.time()
    try:
        out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return f"{block}: still running after {TIMEOUT} s\n{e.stdout or ''}{e.stderr or ''}"
    took = time.time() - t0
    if out.returncode != 0 or "Traceback (most recent call last)" in out.stderr:
        return f"{block}: exit status {out.returncode}\n--- stdout\n{out.stdout}--- stderr\n{out.stderr}"
    print(f"ok  {block}  {took:.1f}s")
    return None


def check_shell(block: Block) -> str | None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    for raw in block.code.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        make = re.match(r"^make ([\w-]+)$", line)
        if make and make.group(1) in targets:
            continue
        if not make and any(p.match(line) for p in SHELL_OK):
            continue
        return f"{block}: {line!r} is neither a Makefile target nor a command the tests run"
    print(f"ok  {block}  (commands checked)")
    return None


ACL_LINE = re.compile(r"^ACL SETUSER (\S+)-([a-z-]+) on >\S+ (.*)$", re.I)


def run_redis(block: Block, redis: Redis, python: Path) -> str | None:
    for raw in block.code.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        acl = ACL_LINE.match(line)
        if acl:
            queue, role, rules = acl.groups()
            want = subprocess.run(
                [str(python), "-c", "import sys, tideq; print(tideq.acl_rules(sys.argv[1], sys.argv[2]))",
                 queue, role], capture_output=True, text=True, check=True).stdout.strip()
            if rules != want:
                return f"{block}: the rules for {queue}/{role} differ from acl_rules:\n  README: {rules}\n  now:    {want}"
        out = subprocess.run(["redis-cli", "-p", str(redis.port), *shlex.split(line)],
                             capture_output=True, text=True)
        reply = out.stdout.strip()
        if out.returncode != 0 or reply.startswith(("ERR", "(error)", "WRONGTYPE", "NOPERM")):
            return f"{block}: {line!r} -> {reply}{out.stderr}"
    print(f"ok  {block}  (commands run)")
    return None


def main() -> int:
    readme = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "README.md"
    all_blocks = blocks(readme)
    unknown = [b for b in all_blocks if b.lang not in ("python", "js", "rust", "toml", "sh", "redis")]
    if unknown:
        print("\n".join(f"{b}: no way to run a '{b.lang}' block" for b in unknown))
        return 1
    python = ROOT / ".venv" / "bin" / "python"
    work = Path(tempfile.mkdtemp(prefix="tideq-readme-"))
    redis = Redis(work)
    failures: list[str] = []
    try:
        env = dict(os.environ, TIDEQ_REDIS_URL=redis.url, PYTHONUNBUFFERED="1")
        # Node: `tideq` resolves to this checkout, as after `npm install /path/to/tideq`.
        (work / "node_modules").mkdir()
        (work / "node_modules" / "tideq").symlink_to(ROOT)
        # The OpenTelemetry packages the README's tracing example imports, as if installed beside
        # tideq (they are this checkout's devDependencies).
        if (ROOT / "node_modules" / "@opentelemetry").is_dir():
            (work / "node_modules" / "@opentelemetry").symlink_to(ROOT / "node_modules" / "@opentelemetry")
        # Rust: a crate beside a `tideq` directory that is this checkout.
        (work / "tideq").symlink_to(ROOT)
        app = work / "app"
        (app / "src" / "bin").mkdir(parents=True)
        manifests = [b for b in all_blocks if b.lang == "toml"]
        rust = [b for b in all_blocks if b.lang == "rust"]
        pyfiles: list[Path] = []

        for b in all_blocks:
            if b.lang in ("toml", "rust"):
                continue
            redis.cli("FLUSHALL")
            if b.lang == "sh":
                failures.append(check_shell(b) or "")
            elif b.lang == "redis":
                failures.append(run_redis(b, redis, python) or "")
            elif b.lang == "python":
                f = work / f"readme_{b.line}.py"
                f.write_text(b.code)
                pyfiles.append(f)
                failures.append(run(b, [str(python), str(f)], env, work) or "")
            elif b.lang == "js":
                f = work / f"readme_{b.line}.mjs"
                f.write_text(b.code)
                failures.append(run(b, ["node", str(f)], env, work) or "")

        if pyfiles:
            out = subprocess.run([str(python), "-m", "mypy", "--check-untyped-defs", "--no-error-summary",
                                  *map(str, pyfiles)], capture_output=True, text=True, cwd=work)
            if out.returncode != 0:
                failures.append(f"mypy on the README's Python blocks:\n{out.stdout}{out.stderr}")
            else:
                print(f"ok  mypy on {len(pyfiles)} Python block(s)")

        if rust:
            if len(manifests) != 1:
                failures.append(f"{len(rust)} Rust block(s) need exactly one ```toml block, found {len(manifests)}")
            else:
                failures.append(build_and_run_rust(manifests[0], rust, app, env, redis) or "")
    finally:
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    failures = [f for f in failures if f]
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


def build_and_run_rust(manifest: Block, rust: list[Block], app: Path, env: dict[str, str],
                       redis: Redis) -> str | None:
    toml = manifest.code
    if "[dependencies]" not in toml:
        toml = "[dependencies]\n" + toml
    (app / "Cargo.toml").write_text(
        '[package]\nname = "readme"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
        + toml + "\n[workspace]\n")
    shutil.copy(ROOT / "Cargo.lock", app / "Cargo.lock")
    for b in rust:
        (app / "src" / "bin" / f"readme_{b.line}.rs").write_text(b.code)
    build_env = dict(env, CARGO_TARGET_DIR=str(TARGET))
    out = subprocess.run(["cargo", "build", "-q", "--bins"], cwd=app, env=build_env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return f"{manifest} + Rust blocks: cargo build failed\n{out.stderr}"
    print(f"ok  {manifest}  (the Rust blocks' manifest builds)")
    for b in rust:
        redis.cli("FLUSHALL")
        err = run(b, [str(TARGET / "debug" / f"readme_{b.line}")], env, app)
        if err:
            return err
    return None


if __name__ == "__main__":
    sys.exit(main())
