"""What `make lint` checks of the floors beyond import-linter's contracts (.importlinter):

- no import cycle between modules of gpujob (imports inside functions count: moving an import into a
  function hides nothing from this check), found as strongly connected components of grimp's graph;
- no module of gpujob over MAX_LINES lines (split by concept: docs/architecture.md).

    python scripts/floor_check.py      # exit 1 and the offenders when either fails
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450


def module_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of two or more modules that import each other, directly or through others."""
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("gpujob")}
        for m in graph.modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):  # iterative Tarjan: the graph is deep enough to hit the recursion limit
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def long_modules(limit: int = MAX_LINES) -> list[tuple[str, int]]:
    out = []
    for path in sorted((ROOT / "gpujob").rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out.append((str(path.relative_to(ROOT)), n))
    return out


def main() -> int:
    sys.path.insert(0, str(ROOT))
    cycles = module_cycles(grimp.build_graph("gpujob"))
    long = long_modules()
    for comp in cycles:
        print(f"import cycle between {len(comp)} modules: {' <-> '.join(comp)}")
    for path, n in long:
        print(f"{path}: {n} lines, over {MAX_LINES}: split it by concept")
    if cycles or long:
        return 1
    print(f"floors: no import cycle between modules, no module over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
