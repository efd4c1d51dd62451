"""scripts/floor_check.py, the part of `make lint` import-linter does not do: module cycles, long modules."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("floor_check", ROOT / "scripts" / "floor_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cycle_through_three_modules_is_found_and_a_chain_is_not() -> None:
    fc = _script()
    g = grimp.ImportGraph()
    for a, b in [
        ("gpujob.a", "gpujob.b"),
        ("gpujob.b", "gpujob.c"),
        ("gpujob.c", "gpujob.a"),
        ("gpujob.c", "gpujob.d"),
    ]:
        g.add_import(importer=a, imported=b)
    g.add_module("gpujob.e")
    assert fc.module_cycles(g) == [["gpujob.a", "gpujob.b", "gpujob.c"]]
    chain = grimp.ImportGraph()
    chain.add_import(importer="gpujob.a", imported="gpujob.b")
    assert fc.module_cycles(chain) == []


def test_gpujob_has_no_module_cycle_and_no_module_over_the_limit() -> None:
    fc = _script()
    assert fc.module_cycles(grimp.build_graph("gpujob")) == []
    assert fc.long_modules() == []
    assert fc.long_modules(limit=50), "the line count reads the modules"
