"""Write constraints.txt: the exact versions of gpujob's dependencies (with its test extra), as installed
now, so a failure seen on a fresh machine can be reproduced on this known-good set:

    python scripts/constraints.py            # after a green `make test` on the newest versions
    make install-pinned                      # installs gpujob with exactly these versions

`make install` (and so CI) installs the newest versions pyproject.toml's ranges allow, as a new user gets
them; this file is only the record of the last set known to pass.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str, extras: set[str]) -> dict[str, str]:
    seen: dict[str, str] = {}
    todo = [(root, extras)]
    while todo:
        name, want = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        key = norm(dist.metadata["Name"])
        if key in seen and not want:
            continue
        seen[key] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (want or {""})):
                continue
            if norm(req.name) not in seen:
                todo.append((req.name, set(req.extras)))
    seen.pop("gpujob", None)
    return seen


def main() -> int:
    pins = closure("gpujob", {"test"})
    head = (
        "# The last known-good set of gpujob's dependencies (test extra included), written by\n"
        f"# scripts/constraints.py on {datetime.now(UTC):%Y-%m-%d} with Python {sys.version.split()[0]}.\n"
        "# `make install` takes the newest versions pyproject.toml allows; `make install-pinned` takes these.\n"
    )
    body = "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))
    (ROOT / "constraints.txt").write_text(head + body)
    print(f"constraints.txt: {len(pins)} packages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
