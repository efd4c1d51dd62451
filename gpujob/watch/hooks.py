"""What a capability adds to the watch loop (gpujob.watch imports no capability): a `WatchHooks` object
per capability and per watcher, made by Capability.watch_hooks (gpujob.plan.capability). Every method
is a no-op by default; the loop calls each capability's hooks in the order the capabilities were given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.plan.capability import Capability
from gpujob.plan.model import Action


class WatchHooks:
    @property
    def waiting(self) -> bool:
        """Something of this capability still waits: the loop does not end meanwhile."""
        return False

    def admit(self, watcher: Any) -> None:
        """At the start of a tick, before the job files are read again."""

    async def settle(self, watcher: Any, loaded: list[Any], live: Any) -> list[Any]:
        """The tick's job files once live state is read (e.g. a sweep's cells landed), before the plan."""
        return loaded

    async def judge(self, watcher: Any, j: Any, jp: Any, live: Any) -> int | None:
        """Before the policy decides a job: a watch exit code when this capability acted on it itself."""
        return None

    async def park_reason(self, watcher: Any, j: Any, machine: Any, provider: Any) -> str | None:
        """After a tick that changed nothing for the job: a reason to pull and park it now (or None)."""
        return None

    def hold(self, todo: Sequence[Action]) -> tuple[list[Action], list[str]]:
        """Actions of the plan that wait for a person, never for watch, and what to tell them."""
        return [], []

    def is_recovery(self, job: str, decision: Any) -> bool:
        """Whether a decision counts toward --max-recoveries-per-hour."""
        return bool(decision.recovery)

    def created(self, job: str, ok: bool) -> None:
        """After the tick applied a job's actions."""

    def close(self) -> None:
        """When the watch ends."""

    def outputs_pull(self) -> Any:
        """The pull of a job's outputs (gpujob.watch.pulls.OutputsPull) this capability offers, or None."""
        return None


def watch_hooks(capabilities: Sequence[Capability], options: Any) -> list[WatchHooks]:
    return [h for cap in capabilities if (h := cap.watch_hooks(options)) is not None]


def outputs_pull(hooks: Sequence[WatchHooks]) -> Any:
    return next((pull for h in hooks if (pull := h.outputs_pull()) is not None), None)


def held_for_people(hooks: Sequence[WatchHooks], todo: Sequence[Action]) -> tuple[list[Action], list[str]]:
    actions: list[Action] = []
    said: list[str] = []
    for h in hooks:
        more, why = h.hold(todo)
        actions += more
        said += why
    return actions, said


def is_recovery(hooks: Sequence[WatchHooks], job: str, decision: Any) -> bool:
    answers = [h.is_recovery(job, decision) for h in hooks]
    return all(answers) if answers else bool(decision.recovery)
