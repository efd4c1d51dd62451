"""The `partition` fault (gpujob sim inject partition --pod-id ID): a member of a cluster or private
network cut off the private network while its SSH still answers, as a broken overlay link is on a real
platform. The simulator's members share one network namespace (every 127/8 address reaches `lo`), so
nothing there can drop the packets; instead the member's private address becomes one in TEST-NET-1
(RFC 5737, 192.0.2.0/24), which no host has: nothing listens on it, and the member cannot listen there
itself. The platform's answers report that address, as a real platform reports the address that does
not answer."""

from __future__ import annotations

from typing import Any

UNROUTED = "192.0.2.{host}"


def partitioned(sim: Any, pod_id: str) -> bool:
    return sim.faults.peek("partition", pod_id=pod_id) is not None


def reachable_ip(sim: Any, pod_id: str, ip: str | None) -> str | None:
    """The private address the platform reports for a member: its own, or an unrouted one."""
    if ip is None or not partitioned(sim, pod_id):
        return ip
    return UNROUTED.format(host=int(ip.rpartition(".")[2] or 0) % 250 + 1)
