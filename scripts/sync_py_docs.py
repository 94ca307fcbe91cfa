#!/usr/bin/env python3
"""Makes the Rust doc comments of the Python binding say what ``_tideq.pyi`` says.

The stub is the one source of the Python API's docs: it is what editors, type checkers and
readers of the repository see, and its asyncio half is generated from it
(``scripts/gen_async_pyi.py``). The native module carries the same docs at run time (``help()``,
``__doc__``) as the ``///`` comments of the ``#[pymethods]`` and ``#[pyclass]`` items, and
``tests/python/test_docs.py`` checks every documented class, method, property and function whole
(after ``inspect.cleandoc``) against the built module.

This script fixes what that test finds: for each member whose run-time docstring differs from the
stub's, it finds the ``///`` block in ``bindings-python/src`` that holds the run-time text and
rewrites it with the stub's. Blocks are found by their text, not by parsing Rust, so the files a
method lives in (one ``#[pymethods]`` block per role), shared hidden base classes (``_Queue``,
``_Running``...) and the class macros (``runtime::api_classes!``) need no rules here. A text found
in no block, or in several blocks, is reported for a hand edit. Run it with the installed
package (``.venv/bin/python scripts/sync_py_docs.py``), then rebuild; ``--check`` only reports.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import pathlib
import re
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
STUB = ROOT / "bindings-python" / "python" / "tideq" / "_tideq.pyi"
SRC = ROOT / "bindings-python" / "src"
DOC_LINE = re.compile(r"^(\s*)///(?: ?)(.*)$")


def documented(stub: str) -> list[tuple[str, str, str]]:
    """(class or "", member or "", docstring) for everything the stub documents (public names;
    the first of a method's overloads)."""
    out: list[tuple[str, str, str]] = []
    for node in ast.parse(stub).body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if doc:
                out.append((node.name, "", doc))
            seen = set()
            for m in node.body:
                if isinstance(m, ast.FunctionDef) and not m.name.startswith("_") and m.name not in seen:
                    doc = ast.get_docstring(m)
                    if doc:
                        seen.add(m.name)
                        out.append((node.name, m.name, doc))
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if doc:
                out.append(("", node.name, doc))
    return out


def runtime_doc(module: Any, cls: str, member: str) -> str:
    obj = getattr(module, cls) if cls else module
    if member:
        obj = getattr(obj, member)
    return inspect.cleandoc(obj.__doc__ or "")


def doc_blocks(path: pathlib.Path) -> list[tuple[int, int, str, str]]:
    """The ``///`` blocks of a file: (first line, end line (exclusive), indentation, text)."""
    lines = path.read_text().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = DOC_LINE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, text = i, m.group(1), []
        while i < len(lines) and (m := DOC_LINE.match(lines[i])) and m.group(1) == indent:
            text.append(m.group(2))
            i += 1
        blocks.append((start, i, indent, inspect.cleandoc("\n".join(text))))
    return blocks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report differences, change nothing")
    args = parser.parse_args()

    from tideq import _tideq

    stub = STUB.read_text()
    wrong = []
    for cls, member, doc in documented(stub):
        want, have = inspect.cleandoc(doc), runtime_doc(_tideq, cls, member)
        if want != have:
            wrong.append((f"{cls}.{member}" if cls and member else cls or member, have, want))
    if not wrong:
        return 0
    # One rewrite per run-time text (members sharing a method, as AsyncQueue's and Queue's, give
    # the same text twice: the stub gives them the same docs).
    rewrites: dict[str, tuple[str, str]] = {}
    failed = []
    for name, have, want in wrong:
        if have in rewrites and rewrites[have][1] != want:
            failed.append(f"{name}: shares its run-time doc with {rewrites[have][0]}, whose stub says otherwise")
        rewrites.setdefault(have, (name, want))
    if args.check:
        for name, _, _ in wrong:
            print(f"{name}: the run-time docstring differs from the stub's", file=sys.stderr)
        return 1
    files = sorted(SRC.glob("*.rs"))
    found: dict[str, list[tuple[pathlib.Path, int, int, str]]] = {h: [] for h in rewrites}
    for path in files:
        for start, end, indent, text in doc_blocks(path):
            if text in found:
                found[text].append((path, start, end, indent))
    edits: dict[pathlib.Path, list[tuple[int, int, list[str]]]] = {}
    for have, (name, want) in rewrites.items():
        where = found[have]
        if len(where) != 1:
            places = ", ".join(f"{p.relative_to(ROOT)}:{s + 1}" for p, s, _, _ in where) or "no /// block"
            failed.append(f"{name}: its run-time text is in {places}; edit it by hand")
            continue
        path, start, end, indent = where[0]
        new = [f"{indent}///" + (f" {line}" if line else "") for line in want.split("\n")]
        edits.setdefault(path, []).append((start, end, new))
    for path, changes in edits.items():
        lines = path.read_text().split("\n")
        for start, end, new in sorted(changes, reverse=True):
            lines[start:end] = new
        path.write_text("\n".join(lines))
        print(f"rewrote {len(changes)} doc comment(s) in {path.relative_to(ROOT)}")
    for f in failed:
        print(f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
