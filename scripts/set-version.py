#!/usr/bin/env python3
"""Sets tideq's version everywhere it is written, from one argument.

    python3 scripts/set-version.py 0.2.0       # writes it
    python3 scripts/set-version.py --check     # fails when the files disagree (make lint)

The version's home is `[workspace.package] version` in Cargo.toml. The Python package takes it
from there (maturin), and the npm platform packages from package.json when they are made
(scripts/npm-packages.mjs). What this script writes besides: the exact version the workspace's
`tideq` path dependency requires (so the published CLI crate needs that very core), package.json's
version, and the two lock files' entries for the workspace's own packages.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")


def workspace_version(cargo: str) -> str:
    section = cargo.split("[workspace.package]", 1)[1]
    return re.search(r'^version = "([^"]+)"', section, re.M).group(1)


def written(cargo: str, package: dict) -> dict:
    dep = re.search(r'^tideq = \{ path = "core", version = "=([^"]+)" \}', cargo, re.M)
    return {
        "Cargo.toml [workspace.package]": workspace_version(cargo),
        "Cargo.toml tideq dependency": dep.group(1) if dep else "(missing)",
        "package.json": package["version"],
    }


def main() -> int:
    cargo_path, package_path = ROOT / "Cargo.toml", ROOT / "package.json"
    cargo = cargo_path.read_text()
    package = json.loads(package_path.read_text())
    if sys.argv[1:] == ["--check"]:
        found = written(cargo, package)
        if len(set(found.values())) != 1:
            print("versions disagree (set them with scripts/set-version.py VERSION):", file=sys.stderr)
            for where, version in found.items():
                print(f"  {where}: {version}", file=sys.stderr)
            return 1
        print(f"version {found['package.json']} everywhere")
        return 0
    if len(sys.argv) != 2 or not SEMVER.match(sys.argv[1]):
        print(__doc__, file=sys.stderr)
        return 2
    version = sys.argv[1]
    old = workspace_version(cargo)
    head, tail = cargo.split("[workspace.package]", 1)
    tail = re.sub(r'^version = "[^"]+"', f'version = "{version}"', tail, count=1, flags=re.M)
    tail = re.sub(
        r'^(tideq = \{ path = "core", version = )"=[^"]+"', rf'\1"={version}"', tail, count=1, flags=re.M
    )
    cargo_path.write_text(head + "[workspace.package]" + tail)
    package["version"] = version
    package_path.write_text(json.dumps(package, indent=2) + "\n")
    lock = ROOT / "Cargo.lock"
    text = lock.read_text()
    for name in ("tideq", "tideq-cli", "tideq-node", "tideq-python", "tideq-bench", "tideq-testing"):
        text = text.replace(f'name = "{name}"\nversion = "{old}"', f'name = "{name}"\nversion = "{version}"')
    lock.write_text(text)
    npm_lock = ROOT / "package-lock.json"
    if npm_lock.exists():
        data = json.loads(npm_lock.read_text())
        data["version"] = version
        data.get("packages", {}).get("", {})["version"] = version
        npm_lock.write_text(json.dumps(data, indent=2) + "\n")
    print(f"version {old} -> {version}; add a section to CHANGELOG.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
