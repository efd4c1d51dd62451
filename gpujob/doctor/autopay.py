"""What the doctor can tell of RunPod's Auto-Pay (RP8: a low balance stops every pod, then deletes pods
and storage with no backup; stopped pods go after about 30 days). No API of RunPod's reports whether
Auto-Pay is on (GraphQL `myself` has clientBalance, currentSpendPerHr and spendLimit; REST v2 billing
history), so the doctor says what it could read: whether the balance is readable, which is what lets
`gpujob plan` see a low balance coming, and where Auto-Pay is turned on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.doctor.setup import Line

WHAT = "RunPod Auto-Pay (RP8)"
CONSOLE = "turn on Auto-Pay in the RunPod console (Billing), or keep checkpoints on a network volume"


def autopay_line(results: Sequence[Any]) -> Line | None:
    """One line from the doctor's RunPod results (None: RunPod was not checked)."""
    myself = next((r for r in results if r.platform == "runpod" and "query myself" in r.call), None)
    if myself is None:
        return None
    if myself.outcome == "ok":
        return Line(
            "ok",
            WHAT,
            "not reported by any RunPod API; the balance is readable (GraphQL myself), so `gpujob plan` "
            "says how long it lasts and errs when a run cannot finish on it",
            CONSOLE,
        )
    why = f"GraphQL myself: {myself.outcome}, as above"  # its text is the API's: shown once, made safe, above
    return Line(
        "warn",
        WHAT,
        f"not reported by any RunPod API, and the balance cannot be read either ({why}): nothing warns "
        "before a low balance stops every pod and deletes pods and their disks, with no backup",
        CONSOLE + "; `gpujob plan` warns of every stopped pod holding un-pulled checkpoints",
    )
