"""Runs every code block of README.md and of the documentation (docs/) as pasted, twice.

Usage: .venv/bin/python scripts/readme.py [FILE.md ...]   (run by `make test`, after the bindings
are built: scripts/test-python.sh and scripts/test-node.sh; by default README.md, then the pages
of mkdocs.yml's nav in order, then any other page under docs/, leaving out the generated API
reference under docs/reference/)

Each fenced block (also one indented inside a content tab, `=== "Python"`) is handled by its
language:
- ```python: run with .venv/bin/python, then all of them type-checked with mypy against the stubs;
  a block importing `django` runs with .venv-django/bin/python instead (Django 6 needs Python
  3.12+: scripts/test-django.sh makes that virtualenv) and is left out of the mypy run.
- ```js: run with node as an ES module from a directory where `tideq` resolves to this checkout
  (as after `npm install /path/to/tideq`).
- ```ts: TypeScript, compiled as an ES module with this checkout's `tsc --strict` (its errors
  fail the block), then run as a ```js block is.
- ```toml: a Cargo manifest fragment: the [dependencies] of the one crate the Rust blocks are
  built in (all such blocks merged: a dependency given twice must be given the same way); the
  `tideq` dependency as `cargo add tideq` writes it (`tideq = "0.1"`, or with `version = "0.1"`
  and features) is taken from this checkout, and so is `tideq-cli`.
- ```rust: each a `src/bin/*.rs` of that crate, built once and run.
- ```redis: redis-cli commands, each line run against the private redis-server (an error reply
  fails the block); an `ACL SETUSER <queue>-<role> on >password <rules>` line must give exactly
  the rules `tideq.acl_rules(queue, role)` prints, so the ACL lines cannot drift.
- ```sh: commands, not code: each line must be a command the test suite itself runs or a target
  of the Makefile (`make test` cannot run itself), so a renamed target fails here.
- ```yaml: Kubernetes manifests and other configuration, not applied: each block must parse
  (every document, with PyYAML); tests check what they say (tests/python/test_autoscaling.py).
- ```text: shown, not run (output, formats, diagrams).

What a user does is what is checked: every block runs against one private redis-server on a free
loopback port (TIDEQ_REDIS_URL points at it), one block after another with nothing cleaned in
between, and each block twice in a row, as someone trying the samples would. Each run must exit
with status 0 within 60 s, must not write a traceback, and must print what its comments say: a
trailing comment starting with `→` (`print(x)  # → 1 1`, `console.log(x); // → true`) is the line
that statement writes, `...` matching anything; the `→` lines must appear in stdout in their
order. No two blocks may make a queue of the same name (so one sample's leftovers cannot hang or
change another's), unless a block says `tideq:shared-queue` (a sample deliberately feeding
another). A block that fails prints its output and the file and line it starts on.
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
    # scripts/ensure-deps.sh installs Redis so.
    re.compile(r"^sudo apt-get install -y redis-server$"),
    re.compile(r"^pip install \.$"),
    re.compile(r"^npm install$"),
    re.compile(r"^npm run build$"),
    re.compile(r"^npm install /path/to/tideq$"),
    re.compile(r"^cargo install --path \S+$"),
]


# A Python block of the Django integration (run in the Django virtualenv).
DJANGO = re.compile(r"^\s*(import django|from django)\b", re.M)

LANGS = ("python", "js", "ts", "rust", "toml", "sh", "redis", "yaml", "text")
RUNS = 2


class Block:
    def __init__(self, path: Path, lang: str, line: int, code: str) -> None:
        self.path, self.lang, self.line, self.code = path, lang, line, code
        self.name = re.sub(r"\W", "_", f"{path.relative_to(ROOT).with_suffix('')}_{line}").lower()

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file; a block indented in a tab is dedented."""
    out: list[Block] = []
    lang: str | None = None
    indent, start, lines = "", 0, []
    for i, text in enumerate(path.read_text().splitlines(), 1):
        fence = re.match(r"^(\s*)```(\w*)\s*$", text)
        if fence and lang is None:
            indent, lang, start, lines = fence.group(1), fence.group(2) or "text", i, []
        elif fence and lang is not None and fence.group(2) == "" and fence.group(1) == indent:
            out.append(Block(path, lang, start, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            if text.strip() and not text.startswith(indent):
                sys.exit(f"{path}:{i}: a line of the block at line {start} is indented less than its fence")
            lines.append(text[len(indent):])
    if lang is not None:
        sys.exit(f"{path}:{start}: unclosed code block")
    return out


def pages() -> list[Path]:
    """README.md, then the site's pages in nav order, then any page not in the nav."""
    nav = re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    docs = ROOT / "docs"
    out = [ROOT / "README.md"] + [docs / p for p in nav if not p.startswith("reference/")]
    out += sorted(p for p in docs.rglob("*.md") if p not in out and "reference" not in p.relative_to(docs).parts)
    return [p for p in out if p.exists()]


EXPECT = re.compile(r"(?:#|//)\s*→\s*(.*?)\s*$")


def expected(block: Block) -> list[str]:
    return [m.group(1) for line in block.code.splitlines() if (m := EXPECT.search(line))]


def check_output(block: Block, stdout: str, run_no: int) -> str | None:
    """The `→` comments, in order, as a subsequence of stdout's lines."""
    lines = [line.strip() for line in stdout.splitlines()]
    at = 0
    for want in expected(block):
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return (f"{block}: run {run_no} did not print {want!r} (a `→` comment), in order\n"
                    f"--- stdout\n{stdout}")
        at += 1
    return None


QUEUE_NAMES = [
    re.compile(r"\b(?:Async)?(?:Capped)?Queue\(\s*[\"']([^\"']+)[\"']"),              # Python, Node
    re.compile(r"\b(?:Capped)?Queue::\w+\(\s*&?[\w.()]+,\s*\"([^\"]+)\""),             # Rust
]


def shared_queues(all_blocks: list[Block]) -> list[str]:
    """Queue names made in more than one block (a block saying tideq:shared-queue excepted)."""
    seen: dict[str, Block] = {}
    out = []
    for b in all_blocks:
        if b.lang not in ("python", "js", "ts", "rust") or "tideq:shared-queue" in b.code:
            continue
        names = {n for p in QUEUE_NAMES for n in p.findall(b.code)}
        for n in sorted(names):
            if n in seen:
                out.append(f"{b}: makes queue {n!r}, as {seen[n]} does: give each sample its own queue names")
            else:
                seen[n] = b
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
    """Runs one block's command twice in a row; returns an error report, or None."""
    took = []
    for run_no in range(1, RUNS + 1):
        t0 = time.time()
        try:
            out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            return f"{block}: run {run_no} still running after {TIMEOUT} s\n{e.stdout or ''}{e.stderr or ''}"
        took.append(f"{time.time() - t0:.1f}s")
        if out.returncode != 0 or "Traceback (most recent call last)" in out.stderr:
            return (f"{block}: run {run_no}: exit status {out.returncode}\n--- stdout\n{out.stdout}"
                    f"--- stderr\n{out.stderr}")
        err = check_output(block, out.stdout, run_no)
        if err:
            return err
    print(f"ok  {block}  {' '.join(took)}  ({len(expected(block))} output line(s) checked)")
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


def run_ts(block: Block, env: dict[str, str], work: Path) -> str | None:
    """A ```ts block: `tsc --strict` as an ES module (`.mts`), then node on what it wrote."""
    f = work / f"{block.name}.mts"
    f.write_text(block.code)
    out = subprocess.run([str(ROOT / "node_modules" / ".bin" / "tsc"), "--strict", "--target", "es2022",
                          "--lib", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
                          "--pretty", "false", str(f)], capture_output=True, text=True, cwd=work)
    if out.returncode != 0:
        return f"{block}: tsc --strict failed\n{out.stdout}{out.stderr}"
    return run(block, ["node", str(f.with_suffix(".mjs"))], env, work)


def check_yaml(block: Block, python: Path) -> str | None:
    """A ```yaml block: every document parses (PyYAML, in the venv the Python blocks run in)."""
    out = subprocess.run([str(python), "-c", "import sys, yaml; list(yaml.safe_load_all(sys.stdin))"],
                         input=block.code, capture_output=True, text=True)
    if out.returncode != 0:
        return f"{block}: not YAML:\n{out.stderr}"
    print(f"ok  {block}  (parsed)")
    return None


def main() -> int:
    files = [Path(a).resolve() for a in sys.argv[1:]] or pages()
    all_blocks = [b for f in files for b in blocks(f)]
    bad = [f"{b}: no way to run a '{b.lang}' block (use ```text for what is shown, not run)"
           for b in all_blocks if b.lang not in LANGS] + shared_queues(all_blocks)
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    print(f"{len(all_blocks)} blocks in {len(files)} file(s), each run {RUNS} times")
    python = ROOT / ".venv" / "bin" / "python"
    django_python = ROOT / ".venv-django" / "bin" / "python"
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
        # The web frameworks docs/frameworks.md mounts the dashboard in (devDependencies too).
        for framework in ("express", "fastify"):
            if (ROOT / "node_modules" / framework).is_dir():
                (work / "node_modules" / framework).symlink_to(ROOT / "node_modules" / framework)
        # Rust: a crate beside a `tideq` directory that is this checkout.
        (work / "tideq").symlink_to(ROOT)
        app = work / "app"
        (app / "src" / "bin").mkdir(parents=True)
        manifests = [b for b in all_blocks if b.lang == "toml"]
        rust = [b for b in all_blocks if b.lang == "rust"]
        pyfiles: list[Path] = []

        for b in all_blocks:
            if b.lang in ("toml", "rust", "text"):
                continue
            if b.lang == "sh":
                failures.append(check_shell(b) or "")
            elif b.lang == "redis":
                failures.append(run_redis(b, redis, python) or "")
            elif b.lang == "yaml":
                failures.append(check_yaml(b, python) or "")
            elif b.lang == "python":
                f = work / f"{b.name}.py"
                f.write_text(b.code)
                if DJANGO.search(b.code):
                    if not django_python.exists():
                        failures.append(f"{b}: imports django, and {django_python} is missing: "
                                        "run `TIDEQ_BUILD_ONLY=1 bash scripts/test-django.sh`")
                        continue
                    failures.append(run(b, [str(django_python), str(f)], env, work) or "")
                    continue
                pyfiles.append(f)
                failures.append(run(b, [str(python), str(f)], env, work) or "")
            elif b.lang == "js":
                f = work / f"{b.name}.mjs"
                f.write_text(b.code)
                failures.append(run(b, ["node", str(f)], env, work) or "")
            elif b.lang == "ts":
                failures.append(run_ts(b, env, work) or "")

        if pyfiles:
            out = subprocess.run([str(python), "-m", "mypy", "--check-untyped-defs", "--no-error-summary",
                                  *map(str, pyfiles)], capture_output=True, text=True, cwd=work)
            if out.returncode != 0:
                failures.append(f"mypy on the README's Python blocks:\n{out.stdout}{out.stderr}")
            else:
                print(f"ok  mypy on {len(pyfiles)} Python block(s)")

        if rust:
            if not manifests:
                failures.append(f"{len(rust)} Rust block(s) need a ```toml block for their dependencies")
            else:
                failures.append(build_and_run_rust(manifests, rust, app, env) or "")
    finally:
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    failures = [f for f in failures if f]
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


def merged_dependencies(manifests: list[Block]) -> tuple[str, str | None]:
    """The [dependencies] lines of every toml block, each dependency once. `tideq` as `cargo add
    tideq` writes it (`tideq = "0.1"`, or a table with a version and features) is taken from this
    checkout, with the features any block asks for."""
    deps: dict[str, tuple[str, Block]] = {}
    tideq_features: set[str] = set()
    cli = False
    for m in manifests:
        for raw in m.code.splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line or line == "[dependencies]":
                continue
            if line.startswith("[") or "=" not in line:
                return "", f"{m}: only [dependencies] lines can be merged, not {line!r}"
            key, value = (part.strip() for part in line.split("=", 1))
            if key == "tideq":
                features = re.search(r"features\s*=\s*\[([^\]]*)\]", value)
                tideq_features.update(re.findall(r'"([^"]+)"', features.group(1)) if features else [])
                continue
            if key == "tideq-cli":  # the dashboard's axum router (docs/frameworks.md)
                cli = True
                continue
            if key in deps and re.sub(r"\s", "", deps[key][0]) != re.sub(r"\s", "", value):
                return "", f"{m}: {key} = {value} differs from {deps[key][1]}: {key} = {deps[key][0]}"
            deps.setdefault(key, (value, m))
    features = ", ".join(f'"{f}"' for f in sorted(tideq_features))
    lines = [f'tideq = {{ path = "{ROOT / "core"}", features = [{features}] }}\n']
    if cli:
        lines.append(f'tideq-cli = {{ path = "{ROOT / "cli"}" }}\n')
    lines += [f"{k} = {v}\n" for k, (v, _) in deps.items()]
    return "[dependencies]\n" + "".join(lines), None


def build_and_run_rust(manifests: list[Block], rust: list[Block], app: Path,
                       env: dict[str, str]) -> str | None:
    toml, err = merged_dependencies(manifests)
    if err:
        return err
    manifest = manifests[0]
    (app / "Cargo.toml").write_text(
        '[package]\nname = "readme"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
        + toml + "\n[workspace]\n\n"
        # As the workspace's own dev profile (Cargo.toml): line tables only, so the blocks'
        # binaries take a third of the disk and share the workspace's builds of dependencies.
        '[profile.dev]\ndebug = "line-tables-only"\n\n[profile.dev.package."*"]\ndebug = false\n')
    shutil.copy(ROOT / "Cargo.lock", app / "Cargo.lock")
    for b in rust:
        (app / "src" / "bin" / f"{b.name}.rs").write_text(b.code)
    build_env = dict(env, CARGO_TARGET_DIR=str(TARGET))
    out = subprocess.run(["cargo", "build", "-q", "--bins"], cwd=app, env=build_env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return f"{manifest} + Rust blocks: cargo build failed\n{out.stderr}"
    print(f"ok  {manifest} and {len(manifests) - 1} more  (the Rust blocks' manifest builds)")
    for b in rust:
        err = run(b, [str(TARGET / "debug" / b.name)], env, app)
        if err:
            return err
    return None


if __name__ == "__main__":
    sys.exit(main())
