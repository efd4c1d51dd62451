"""The audit's read as the planner would have read it (so a fingerprint of a fix plan is the one apply
recomputes): what the audit alone reads is left out."""

from __future__ import annotations

from gpujob.live import LiveState

# What only the audit reads (providers' audit_resources); a plan's read never has them.
AUDIT_ONLY_KINDS = frozenset({"cluster", "endpoint", "startup_script"})


def plan_view(live: LiveState) -> LiveState:
    """The audit's read as a plan would have read it: without the audit-only kinds (clusters no listed pod
    is a member of), so a fingerprint taken from it is the one apply recomputes."""
    # a plan's read has the clusters of the member pods it lists (with their nodes), and those members
    kept = [r for r in live.resources if r.kind not in AUDIT_ONLY_KINDS or (r.kind == "cluster" and r.nodes)]
    return live.model_copy(update={"resources": kept})
