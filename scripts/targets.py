"""Every make target the documentation names at least starts (run by `make test`).

Usage: python3 scripts/targets.py [--list]

A documented target that no test runs rots unseen (`make bench` printed a ceiling of 0/s for a
month; `make faults` failed on its last step). So every target named as `make TARGET` in README.md
or docs/*.md must:
- exist in the Makefile, and expand (`make -n TARGET` and `make -n TARGET SMOKE=1`), every file
  its recipe names (scripts/..., tests/..., bench/...) present;
- run in its quick form: `make TARGET SMOKE=1` (the Makefile's quick form: small sizes, a debug
  build where it builds Rust), either here (SMOKE below) or by scripts/test.sh, which must then
  run exactly that command; or be listed in NOT_RUN with the reason.
`--list` prints each documented target and how it is covered, and runs nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run here, in this order, each as `make TARGET SMOKE=1`, each within its time limit (seconds).
SMOKE = {
    "bench": 600,
    "bench-waits": 600,
    "bench-scaleout": 600,
    "demo": 600,
    "stress-process": 900,
    "bench-workers": 600,
    "workers-long": 600,
}

# What a quick run's output must show besides its exit status 0.
OUTPUT = {
    # A real ceiling, and ratios over it (it printed "-P 1 0/s" and "inf%" for a month).
    "bench": r"-P 1 \d+/s +-P 64 \d+/s",
    "demo": r"the dashboard answered",
    "bench-workers": r"ratio 2/1: \d",
    "bench-scaleout": r"a waiting job \(\d+\) +\d+",
    "workers-long": r"ok: \d+ jobs completed",
}
NO_OUTPUT = r"\binf%|NaN"

# Documented targets `make test` does not run, and why.
NOT_RUN = {
    "test": "make test itself",
    "release": "release builds with zig for manylinux2014 (minutes); the release workflow builds "
    "them for every platform, and make test checks the same packages' quick form "
    "(make release-check SMOKE=1)",
}

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def documented() -> dict[str, str]:
    """Targets named `make TARGET` in the documentation (in backticks or a code block), with the
    first place each is named."""
    found: dict[str, str] = {}
    for path in DOCS:
        if "reference" in path.relative_to(ROOT).parts:
            continue
        text = path.read_text()
        # `make TARGET` in running text, and lines of shell blocks.
        named = re.findall(r"`make ([a-z][\w-]*)`", text)
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, re.S):
            named += re.findall(r"^\s*make ([a-z][\w-]*)", block, re.M)
        for t in named:
            found.setdefault(t, str(path.relative_to(ROOT)))
    return found


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))


def run_by_test_sh() -> set[str]:
    """Targets scripts/test.sh runs as `make TARGET SMOKE=1` (or `make TARGET`)."""
    text = (ROOT / "scripts/test.sh").read_text()
    return set(re.findall(r"^\s*make -s ([\w-]+)(?: SMOKE=1)?\s*$", text, re.M))


def dry_run(target: str, smoke: bool) -> str | None:
    """`make -n TARGET [SMOKE=1]`: None, or what is wrong (it fails, or names a missing file)."""
    cmd = ["make", "-n", target] + (["SMOKE=1"] if smoke else [])
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        return f"{' '.join(cmd)}: {out.stderr.strip()}"
    for path in re.findall(r"\b((?:scripts|tests|bench)/[\w./-]+\.(?:sh|py|mjs|js))\b", out.stdout):
        if not (ROOT / path).exists():
            return f"{' '.join(cmd)} names {path}, which does not exist"
    for name in re.findall(r"--bin (\w+)", out.stdout):
        if not (ROOT / f"bench/src/bin/{name}.rs").exists() and not (
            ROOT / f"bench/src/bin/{name}/main.rs"
        ).exists():
            return f"{' '.join(cmd)} runs the binary {name}, which bench/ does not have"
    return None


def main() -> int:
    docs = documented()
    targets = makefile_targets()
    by_test_sh = run_by_test_sh()
    problems = []
    for t, where in sorted(docs.items()):
        if t not in targets:
            problems.append(f"{where} names `make {t}`, which the Makefile does not have")
            continue
        covered = [t in SMOKE, t in by_test_sh, t in NOT_RUN]
        if sum(covered) != 1:
            problems.append(
                f"`make {t}` ({where}) must be run once in its quick form: by scripts/targets.py "
                f"(SMOKE), by scripts/test.sh (`make -s {t} SMOKE=1`), or listed in NOT_RUN "
                f"with the reason"
            )
        for smoke in (False, True):
            err = dry_run(t, smoke)
            if err:
                problems.append(err)
    if "--list" in sys.argv:
        for t in sorted(docs):
            how = (
                "scripts/targets.py" if t in SMOKE else
                "scripts/test.sh" if t in by_test_sh else
                f"not run: {NOT_RUN.get(t, '?')}"
            )
            print(f"make {t:<16} {how}")
        return 1 if problems else 0
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(f"every documented target expands: {', '.join(sorted(docs))}")
    env = {k: v for k, v in os.environ.items() if k not in ("TIDEQ_REDIS_URL", "MAKEFLAGS")}
    for t, limit in SMOKE.items():
        if t not in docs:
            continue
        print(f"== make {t} SMOKE=1", flush=True)
        start = time.monotonic()
        try:
            out = subprocess.run(
                ["make", "-s", t, "SMOKE=1"],
                cwd=ROOT,
                env=env,
                timeout=limit,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        except subprocess.TimeoutExpired as e:
            print(e.stdout or "", end="")
            print(f"make {t} SMOKE=1: still running after {limit} s", file=sys.stderr)
            return 1
        print(out.stdout, end="")
        if out.returncode != 0:
            print(f"make {t} SMOKE=1: exit status {out.returncode}", file=sys.stderr)
            return 1
        want = OUTPUT.get(t)
        if want and not re.search(want, out.stdout):
            print(f"make {t} SMOKE=1: its output lacks {want!r}", file=sys.stderr)
            return 1
        if re.search(NO_OUTPUT, out.stdout):
            print(f"make {t} SMOKE=1: its output holds {NO_OUTPUT!r}", file=sys.stderr)
            return 1
        print(f"ok  make {t} SMOKE=1  ({time.monotonic() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
