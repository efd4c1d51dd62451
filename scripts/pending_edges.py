"""Print the `ignore_imports` lines that .importlinter's `floors` and `capabilities` contracts need today:
every direct import that goes up a floor, or across two capabilities, grouped by floor pair.

    python scripts/pending_edges.py          # the lists, to paste under each contract's ignore_imports

The lists are the ratchet of #35: each entry is an edge still to be turned around (a capability
plugging in through gpujob.plan.capability instead of being imported); they only shrink.
"""

from __future__ import annotations

import configparser
import re
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def floors() -> tuple[dict[str, int], dict[str, bool]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".importlinter")
    lines = [ln.strip() for ln in cfg["importlinter:contract:floors"]["layers"].splitlines() if ln.strip()]
    floor: dict[str, int] = {}
    apart: dict[str, bool] = {}
    for i, line in enumerate(reversed(lines)):  # 0 = the kernel
        independent = "|" in line
        for name in re.split(r"[|:]", line):
            floor[name.strip()] = i
            apart[name.strip()] = independent
    return floor, apart


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def main() -> None:
    floor, apart = floors()
    graph = grimp.build_graph("gpujob")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            a, b = top(importer), top(imported)
            if a == b or a not in floor or b not in floor:
                continue
            up = floor[b] > floor[a]
            across = floor[a] == floor[b] and apart[a]
            if up or across:
                groups[(a, b)].append(f"{importer} -> {imported}")
    for (a, b), edges in sorted(groups.items()):
        how = "a face's table" if b in ("render", "chart") else "plugged in through gpujob.plan.capability"
        print(
            f"    # pending #35: {a} -> {b} ({'across capabilities' if floor[a] == floor[b] else 'up a floor'}; to be {how if b not in ('render', 'chart') else 'moved below the faces'})"
        )
        for e in edges:
            print(f"    {e}")


if __name__ == "__main__":
    main()
