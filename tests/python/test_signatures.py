"""Signatures show real defaults, never ``...`` (``Ellipsis``): at run time
(``inspect.signature``, so ``help()``) and in the stub, the same values, and they are what the
core applies when the argument is left out. ``None`` still means "no bound" where it did
(``keep_for=None``: no age limit), so a default that is a number is the core's number."""

from __future__ import annotations

import ast
import inspect
import pathlib
from typing import Any

import tideq
from tideq import _tideq

STUB = pathlib.Path(_tideq.__file__).with_name("_tideq.pyi")


def runtime_callables() -> list[tuple[str, Any]]:
    """Every public class, method and function of the module, with its qualified name."""
    out: list[tuple[str, Any]] = []
    for name, obj in vars(_tideq).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, type):
            out.append((name, obj))
            # The hidden bases (``_Queue``) hold most methods; builtin bases are not ours.
            for base in [b for b in obj.__mro__ if b.__module__.startswith("tideq")]:
                out += [
                    (f"{name}.{m}", v)
                    for m, v in vars(base).items()
                    if callable(v) and (not m.startswith("_") or m in ("__new__", "__exit__", "__aexit__"))
                ]
        elif callable(obj):
            out.append((name, obj))
    return out


def signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # e.g. an exception class, or a slot without a text signature


def stub_defaults() -> dict[str, dict[str, ast.expr]]:
    """Defaults written in the stub: {"Class" (its ``__new__``), "Class.method" or "function":
    {param: expr}}, overloads merged."""
    out: dict[str, dict[str, ast.expr]] = {}

    def add(key: str, fn: ast.FunctionDef) -> None:
        args = fn.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        out.setdefault(key, {}).update({a.arg: d for a, d in pairs})

    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            add(node.name, node)
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    add(node.name if m.name == "__new__" else f"{node.name}.{m.name}", m)
    return out


def test_signatures_show_real_defaults_not_ellipsis() -> None:
    checked = 0
    for qualname, obj in runtime_callables():
        sig = signature(obj)
        if sig is None:
            continue
        checked += 1
        shown = [p.name for p in sig.parameters.values() if p.default is ...]
        assert not shown, f"{qualname}{sig}: {shown} show Ellipsis, not their default"
    assert checked > 100
    for key, defaults in stub_defaults().items():
        dots = [n for n, d in defaults.items() if isinstance(d, ast.Constant) and d.value is ...]
        assert not dots, f"_tideq.pyi {key}: {dots} default to `...`"
    assert "=Ellipsis" not in str(inspect.signature(tideq.Queue))
    assert "keep_for=86400.0" in str(inspect.signature(tideq.AsyncQueue))


def test_the_stub_and_the_runtime_show_the_same_defaults() -> None:
    compared = 0
    for key, defaults in stub_defaults().items():
        obj: Any = _tideq
        for part in key.split("."):
            obj = getattr(obj, part, None)
        sig = signature(obj) if obj is not None else None
        if sig is None:
            continue
        for param, expr in defaults.items():
            runtime = sig.parameters[param].default
            stub = ast.literal_eval(expr)
            assert (type(stub), stub) == (type(runtime), runtime), f"{key}({param}=...)"
            compared += 1
    assert compared > 100


def test_queue_defaults_are_what_the_core_applies(client: tideq.Client, name: str) -> None:
    """A queue given every default its signature shows is the queue given none (its repr shows
    every option a default stands for)."""
    for cls in (tideq.Queue, tideq.AsyncQueue, tideq.CappedQueue, tideq.AsyncCappedQueue):
        params = inspect.signature(cls).parameters
        defaults = {n: p.default for n, p in params.items() if p.default is not p.empty and n != "client"}
        assert repr(cls(name, client)) == repr(cls(name, client, **defaults)), cls
    q = inspect.signature(tideq.Queue).parameters
    assert {n: q[n].default for n in ("timeout", "keep_for", "keep_dead", "keep_dead_for", "idempotency_window")} == {
        "timeout": None,
        "keep_for": 86400.0,
        "keep_dead": 10000,
        "keep_dead_for": 180 * 86400.0,
        "idempotency_window": 86400.0,
    }
    c = inspect.signature(tideq.CappedQueue).parameters
    assert (c["ttl"].default, c["max_age"].default) == (86400.0, None)
    shown = repr(tideq.Queue(name, client))
    assert "keep_for=86400.0" in shown and "keep_dead=10000" in shown and "timeout=None" in shown
    assert "keep_for=None" in repr(tideq.Queue(name, client, keep_for=None)), "None is still no bound"


def test_acl_rules_default_prefix_is_the_clients() -> None:
    prefix = inspect.signature(tideq.acl_rules).parameters["prefix"].default
    assert prefix == tideq.Client("redis://127.0.0.1:1").prefix == "tideq"
    assert tideq.acl_rules("q", "worker") == tideq.acl_rules("q", "worker", prefix=prefix)
