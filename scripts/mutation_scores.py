"""Mutation scores per area and per file, from `mutmut results --all true` on stdin (`make mutation`).

The areas, and the functions of the mutated files that belong to neither (not scored), are in
pyproject.toml's [tool.gpujob.mutation], beside [tool.mutmut]. A mutant is caught when a test failed
(killed), hung (timeout) or the type checker refused it; "no tests" counts as survived. The score is
caught / scored. Exit status 0: this reports, it does not gate.
"""

from __future__ import annotations

import fnmatch
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

CAUGHT = {"killed", "timeout", "caught by type check"}
UNRUN = {"skipped", "not checked"}


def _config() -> dict:
    return tomllib.loads(Path("pyproject.toml").read_text())["tool"]["gpujob"]["mutation"]


def _file_of(mutant: str) -> str:
    module = mutant.split("__mutmut_")[0].rsplit(".", 1)[0]
    return module.replace(".", "/") + ".py"


def main() -> int:
    cfg = _config()
    areas: dict[str, list[str]] = cfg["areas"]
    not_scored: list[str] = cfg.get("not_scored", [])
    by_area: dict[str, Counter[str]] = defaultdict(Counter)
    by_file: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: dict[str, list[str]] = defaultdict(list)
    skipped = 0
    for raw in sys.stdin:
        name, sep, status = raw.strip().rpartition(": ")
        if not sep or "__mutmut_" not in name:
            continue
        if any(fnmatch.fnmatchcase(name, g) for g in not_scored):
            skipped += 1
            continue
        area = next(
            (a for a, globs in areas.items() if any(fnmatch.fnmatchcase(name, g) for g in globs)), "?"
        )
        for counter in (by_area[area], by_file[_file_of(name)]):
            counter[status] += 1
        if status not in CAUGHT | UNRUN:
            survivors[area].append(f"{name}: {status}")

    def score(c: Counter[str]) -> str:
        scored = sum(n for s, n in c.items() if s not in UNRUN)
        caught = sum(c[s] for s in CAUGHT)
        pct = 100.0 * caught / scored if scored else 0.0
        return (
            f"{caught}/{scored} caught = {pct:.1f} %  ({', '.join(f'{s} {n}' for s, n in sorted(c.items()))})"
        )

    print("\nmutation score per area")
    for area in sorted(by_area):
        print(f"  {area:6} {score(by_area[area])}")
    print("per file")
    for path in sorted(by_file):
        print(f"  {path:34} {score(by_file[path])}")
    print(f"not scored (outside both areas, [tool.gpujob.mutation].not_scored): {skipped} mutants")
    for area in sorted(survivors):
        print(f"survivors, {area} ({len(survivors[area])}; `mutmut show NAME` shows one):")
        for s in survivors[area]:
            print(f"  {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
