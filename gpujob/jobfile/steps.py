"""Checkpoint steps over the writers of a multi-node job (checkpoint.writers, issue #38). Pure.

A checkpoint file's step is the number after `step` in its path under checkpoint.dir (`step-000120.pt`,
`model-rank1-step120.pt`), else its first number (`ckpt_120/rank1.pt`, `120/model.safetensors`); a file
with no number has no step. A step is complete
when every writer has it: node 0 under `rank0`, every node under `all`. The teardown gate waits for the
newest complete step to be pulled and verified from every writer."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

_STEP = re.compile(r"step[-_.]?(\d+)", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")


def step_of(path: str) -> int | None:
    """The step a checkpoint file belongs to (the module's rule), else None."""
    found = _STEP.search(path) or _NUMBER.search(path)
    digits = found.group(found.re.groups) if found else ""
    return int(digits) if digits and len(digits) < 16 else None


def writer_ranks(writers: str, nodes: int) -> list[int]:
    return list(range(nodes)) if writers == "all" else [0]


def steps_of(files: Iterable[str]) -> set[int]:
    return {s for s in (step_of(f) for f in files) if s is not None}


def complete_steps(listings: Mapping[int, Sequence[str]], writers: str, nodes: int) -> list[int]:
    """Steps every writer has, oldest first. `listings`: each node's checkpoint files by rank; a writer
    missing from it (not read) has no step."""
    common: set[int] | None = None
    for rank in writer_ranks(writers, nodes):
        have = steps_of(listings.get(rank, ()))
        common = have if common is None else common & have
    return sorted(common or ())


def newest_complete(listings: Mapping[int, Sequence[str]], writers: str, nodes: int) -> int | None:
    steps = complete_steps(listings, writers, nodes)
    return steps[-1] if steps else None


def files_of_step(
    listings: Mapping[int, Sequence[str]], writers: str, nodes: int, step: int
) -> dict[int, list[str]]:
    """Each writer's files of one step: what a pull of that step takes."""
    return {
        rank: sorted(f for f in listings.get(rank, ()) if step_of(f) == step)
        for rank in writer_ranks(writers, nodes)
    }


def pull_subdir(rank: int, nodes: int) -> str:
    """Where node `rank`'s files land under checkpoint.pull_to: the dir itself for one node, node-<rank>/
    for a gang (two nodes' shards may share a name)."""
    return "" if nodes == 1 else f"node-{rank}"


def gate_problem(
    listings: Mapping[int, Sequence[str]],
    verified: Mapping[int, Iterable[str]],
    writers: str,
    nodes: int,
) -> str | None:
    """Why a teardown of any node must wait, or None. `verified`: each writer's files pulled and
    verified locally (by rank). The newest complete step must be pulled and verified from every writer;
    with no complete step and no checkpoint at all there is nothing to protect."""
    step = newest_complete(listings, writers, nodes)
    if step is None:
        partial = sorted(r for r in writer_ranks(writers, nodes) if steps_of(listings.get(r, ())))
        if partial:
            return (
                f"no checkpoint step is complete: writer node(s) {partial} have steps the others lack; "
                "a teardown now would leave no step every writer agrees on"
            )
        return None
    wanted = files_of_step(listings, writers, nodes, step)
    missing = [
        f"node {rank}: {', '.join(sorted(set(files) - set(verified.get(rank, ()))))}"
        for rank, files in wanted.items()
        if set(files) - set(verified.get(rank, ()))
    ]
    if missing:
        return (
            f"newest complete step {step} is not pulled and verified from every writer ({'; '.join(missing)})"
        )
    return None
