"""The native classes and functions carry the stubs' docs at run time: every public class,
method, property and function documented in ``_tideq.pyi`` has a ``__doc__`` equal to the stub
docstring, whole (both normalised by ``inspect.cleandoc``), so ``help(tideq.Queue)`` shows them.
The stub is the source: ``scripts/sync_py_docs.py`` rewrites the Rust doc comments from it."""

from __future__ import annotations

import ast
import inspect
import pathlib
from typing import Any

import pytest

import tideq
from tideq import _tideq

STUB = pathlib.Path(_tideq.__file__).with_name("_tideq.pyi")


def documented() -> list[tuple[str, str, str]]:
    """(class or "", member or "", stub docstring) for everything the stub documents."""
    out: list[tuple[str, str, str]] = []
    for node in ast.parse(STUB.read_text()).body:
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


def whole(doc: str | None) -> str:
    return inspect.cleandoc(doc or "")


@pytest.mark.parametrize("cls,member,doc", documented(), ids=lambda v: v if isinstance(v, str) and "\n" not in v and len(v) < 40 else "")
def test_runtime_docstrings_match_the_stubs(cls: str, member: str, doc: str) -> None:
    obj: Any = getattr(_tideq, cls) if cls else _tideq
    if member:
        obj = getattr(obj, member)
    assert whole(obj.__doc__) == whole(doc), (
        f"{cls}.{member}: the run-time docstring differs from the stub's "
        "(run .venv/bin/python scripts/sync_py_docs.py, then rebuild)"
    )


def test_help_shows_the_docs() -> None:
    text = pydoc_text(tideq.Queue)
    assert "Enqueue one job." in text and "Start a worker in the background." in text


def pydoc_text(obj: Any) -> str:
    import pydoc

    return pydoc.plain(pydoc.render_doc(obj))
