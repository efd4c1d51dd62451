"""How a user names a sweep, one of its queues, or an address in a queue.

Queue N of sweep `abl` is the job `abl--q<N>` inside gpujob, and the plan prints its actions as
`abl.q<N>.…` (gpujob.naming.action_prefix). Wherever a command takes a job name or an address, both
spellings of a queue are accepted (`abl.q1`, `abl--q1`), and the sweep's own name stands for all of its
queues where that means something (`gpujob state rm abl`, `--replace abl.run`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpujob.naming import action_prefix

_DOTTED_QUEUE = re.compile(r"^(?P<job>[a-z][a-z0-9-]*)\.q(?P<n>[1-9][0-9]*)$")


def queue_job_of(name: str) -> str:
    """'abl.q1' -> 'abl--q1' (the job gpujob knows the queue as); any other name as given."""
    m = _DOTTED_QUEUE.match(name)
    return f"{m['job']}--q{m['n']}" if m else name


def names_job(target: str, job: str) -> bool:
    """Whether `target` names job `job`: the job itself, a queue in either spelling, or the sweep whose
    queue `job` is."""
    from gpujob.naming import sweep_of

    wanted = queue_job_of(target)
    if wanted == job:
        return True
    of = sweep_of(job)
    return of is not None and of[0] == wanted


def jobs_named(target: str, jobs: Iterable[str]) -> list[str]:
    """The jobs `target` names, in the order given."""
    return [j for j in jobs if names_job(target, j)]


def shown(job: str) -> str:
    """How a job is written in an address the plan prints: 'abl--q1' -> 'abl.q1'."""
    return action_prefix(job)
