"""Which GPUs a fault's `--gpu` names: the job file's alias (RTX4090, A4000), a platform id ("NVIDIA
GeForce RTX 4090", A4000x2) or a part of one ("RTX 4090"). Resolved once at inject time against the
simulator's catalogs, so a name that matches nothing is refused instead of queuing a fault that never
fires."""

from __future__ import annotations

from collections.abc import Iterable

from gpujob.sim.prices import Prices


class NoSuchGpu(ValueError):
    """`--gpu` matches no GPU of the simulated platforms."""


def resolve(name: str, catalogs: Iterable[Prices]) -> frozenset[str]:
    """The platform ids (lower case) that `name` stands for: every id of a GPU whose alias or id is
    `name` (a Paperspace GPU's multi-GPU machine types too); failing that, every id containing it."""
    want = name.strip().lower()
    exact: set[str] = set()
    partial: set[str] = set()
    known: list[str] = []
    for prices in catalogs:
        for g in prices.gpus():
            ids = {g.id, *g.multi.values()}
            known.append(g.alias)
            if want in {g.alias.lower(), *(i.lower() for i in ids)}:
                exact |= {i.lower() for i in ids}
            partial |= {i.lower() for i in ids if want and want in i.lower()}
    found = exact or partial
    if not found:
        names = ", ".join(sorted(set(known)))
        raise NoSuchGpu(f"no simulated GPU matches --gpu {name!r}; the job file's names: {names}")
    return frozenset(found)
