"""RunPod's pod migration (beta, docs.runpod.io/references/troubleshooting/pod-migration, read
2026-12-07): a stopped pod whose machine has no free GPU left can be moved to another machine. RunPod
"spins up a new Pod with the same specifications", moves its data there, and the user gets "a new Pod
with a new ID and IP address" (pod ids are tied to physical machines).

The docs say less than a simulator needs, so this is the simplest reading, stated:
  * the new pod keeps the old one's name, image, env (so gpujob's ownership markers), GPU, cloud, data
    center, ports and mounts; the network volume stays the same volume, a volume disk's files move over;
  * the old pod is gone once migrated (its id answers 404, its meter stops): one pod, never two;
  * the new pod is provisioned and boots (the docs: it "provisions the instance"): it comes up RUNNING
    on a new host, so a new SSH port and host key, with the container disk empty as after any start.
`gpujob sim inject migrate --pod-id ID` does it to a stopped (EXITED) pod; any other status is a 409."""

from __future__ import annotations

import shutil

from gpujob.sim import rp_engine
from gpujob.sim.engine import SimError, Simulator
from gpujob.sim.state import new_id


def migrate(sim: Simulator, pod_id: str | None) -> dict[str, str]:
    if not pod_id:
        raise SimError(400, "migrate needs --pod-id: the stopped pod to move")
    with sim.lock:
        old = rp_engine.get_pod(sim, pod_id)
        if old.status != "EXITED":
            raise SimError(409, f"only a stopped pod is migrated; pod {pod_id} is {old.status}", "conflict")
        sim.accrue(old)
        new = old.model_copy(deep=True)
        new.id = new_id()
        new.meter, new.buckets, new.sessions = {}, {}, {}
        new.created_at = new.metered_to = sim.now()
        new.ended_at, new.started_at, new.ssh_port, new.sshd_pid = None, None, None, None
        new.host = old.host + 1  # another machine: a new address and a new host key
        new.gpu_count = new.requested_gpu_count
        new.status = "PROVISIONING"
        new.gen = 0
        old.status, old.ended_at = "TERMINATED", sim.now()
        old.gen += 1
        src, dst = rp_engine.pod_dir(sim, old.id), rp_engine.pod_dir(sim, new.id)
        for sub in ("container/root", "container/tmp"):
            (dst / sub).mkdir(parents=True, exist_ok=True)
        if (src / "volume").exists():
            shutil.copytree(src / "volume", dst / "volume", symlinks=True, dirs_exist_ok=True)
        (dst / "volume").mkdir(parents=True, exist_ok=True)
        sim.state.pods[new.id] = new
        new.gen += 1
        gen = new.gen
        sim.save()
    shutil.rmtree(src, ignore_errors=True)
    sim.spawn(rp_engine.boot, sim, new.id, gen, sim.options.provision_seconds)
    return {"from": old.id, "to": new.id}
