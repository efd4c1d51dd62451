"""The gang under `gpujob watch` (issue #38, docs/multinode.md "Launch, preflight and the gang"): when a
node of a multi-node job is preempted or lost, the others are stopped through the quiesce (no half gang
runs on, nothing trains without its peers), the events name the node and the step the gang restarts
from, and a cluster that cannot be made whole again is parked. The restart itself is the plan's start
and launch: apply's runtime (gpujob.apply.runtime.gang) starts every node again, from the newest
complete step."""
