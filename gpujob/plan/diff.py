"""Desired vs live attribute diff. The only module that imports deepdiff; callers get FieldChanges."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpujob.plan.model import FieldChange

Scalar = str | int | float | bool | list[str] | None

# Fields a provider can change on an existing resource, with the condition that makes it in-place.
# Anything not listed (or failing its condition) forces replacement.
UPDATABLE: dict[str, Callable[[Any, Any], bool]] = {
    # Volumes are grow-only on both platforms: a larger size is an in-place grow, a smaller one is not.
    "volume_gb": lambda before, after: before is not None and after is not None and after > before,
    "size_gb": lambda before, after: before is not None and after is not None and after > before,
    "name": lambda before, after: True,
}


def _root_key(path: str) -> str:
    # deepdiff paths look like root['gpu'] or root['regions'][0]
    inner = path.removeprefix("root[")
    return inner.split("]", 1)[0].strip("'\"")


def diff_fields(
    live: Mapping[str, Scalar],
    desired: Mapping[str, Scalar],
    *,
    updatable: Mapping[str, Callable[[Any, Any], bool]] | None = None,
) -> list[FieldChange]:
    """One FieldChange per top-level key whose normalised value differs, in the desired mapping's order."""
    from deepdiff import DeepDiff

    rules = UPDATABLE if updatable is None else updatable
    result = DeepDiff(dict(live), dict(desired), ignore_order=True, view="tree")
    changed: set[str] = set()
    for items in result.values():
        for item in items:
            changed.add(_root_key(item.path()))
    out: list[FieldChange] = []
    keys = list(desired) + [k for k in live if k not in desired]
    for key in keys:
        if key not in changed:
            continue
        before, after = live.get(key), desired.get(key)
        rule = rules.get(key)
        in_place = rule is not None and rule(before, after)
        out.append(FieldChange(path=key, before=before, after=after, forces_replacement=not in_place))
    return out
