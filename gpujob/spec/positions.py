"""Where a value stands in a job file: key paths (`machine.gpu[1]`) and their 1-based line and column,
recorded by the pre-scan (gpujob.spec.scan) so every later problem points at a precise position."""

from __future__ import annotations

from dataclasses import dataclass, field

Pos = tuple[int, int]


@dataclass
class Positions:
    """key_path -> (line, col), 1-based. `keys` holds where a key is written, `values` where its value starts."""

    keys: dict[str, Pos] = field(default_factory=dict)
    values: dict[str, Pos] = field(default_factory=dict)

    def key(self, path: str) -> Pos:
        return self._nearest(path, prefer_keys=True)

    def value(self, path: str) -> Pos:
        return self._nearest(path, prefer_keys=False)

    def _nearest(self, path: str, *, prefer_keys: bool) -> Pos:
        # An absent key (a missing field, an option left out) points at its closest written ancestor.
        first, second = (self.keys, self.values) if prefer_keys else (self.values, self.keys)
        while path:
            for table in (first, second):
                if path in table:
                    return table[path]
            path = parent_path(path)
        return self.values.get("", (1, 1))


def parent_path(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rfind("[")]
    return path.rpartition(".")[0]


def child_path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key
