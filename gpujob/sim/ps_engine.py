"""Paperspace Core lifecycles: machines (with events), public IPs, snapshots, startup scripts.

On disk a machine is a VM: its block storage (<data>/paperspace/machines/<id>/disk/{workspace,root})
persists across stop and is deleted with the machine; /tmp is wiped at every stop. Each machine
gets its own loopback IP (127.0.x.y): a dynamic IP changes at every start and is gone while off; a
static IP is a claimed public-ip resource that stays (and bills) until released."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from gpujob.sim import podisks, podproc
from gpujob.sim.engine import SimError, Simulator, wipe
from gpujob.sim.gpuhost import GpuHost
from gpujob.sim.state import PsEvent, PsIp, PsMachine, PsScript, PsSnapshot, new_id

REGIONS = {"ny2": "East Coast (NY2)", "ca1": "West Coast (CA1)", "ams1": "Europe (AMS1)"}
KEY_RE = re.compile(r"(ssh-(?:ed25519|rsa) [A-Za-z0-9+/]+=*)")
CAPACITY_MESSAGE = "Out of capacity for the selected machine type in this region. Please try again later."


def region_id(text: str) -> str:
    t = text.strip().lower()
    for short, long in REGIONS.items():
        if t in (short, long.lower()):
            return short
    raise SimError(400, f"Invalid region: {text}", "bad_request")


def machine_dir(sim: Simulator, mid: str) -> Path:
    return sim.data_dir / "paperspace" / "machines" / mid


def get_machine(sim: Simulator, mid: str) -> PsMachine:
    m = sim.state.machines.get(mid)
    if m is None or m.ended_at is not None:
        raise SimError(404, "Machine not found", "not_found")
    return m


def new_event(sim: Simulator, name: str, machine_id: str | None) -> PsEvent:
    ev = PsEvent(id=new_id(12), name=name, machine_id=machine_id, created_at=sim.now())
    sim.state.events[ev.id] = ev
    return ev


def _event(sim: Simulator, ev_id: str, state: str) -> None:
    ev = sim.state.events[ev_id]
    ev.state = state
    if state == "in progress":
        ev.started_at = sim.now()
    if state in ("done", "error"):
        ev.finished_at = sim.now()


def next_ip(sim: Simulator) -> str:
    n = sim.state.ip_counter
    sim.state.ip_counter += 1
    return f"127.0.{(sim.state.ip_base + n // 250) % 250 + 2}.{n % 250 + 2}"


def create_machine(sim: Simulator, m: PsMachine, start_on_create: bool) -> tuple[PsMachine, PsEvent]:
    with sim.lock:
        if sim.state.balance_exhausted:
            raise SimError(402, "Your account balance is insufficient.", "balance")
        if sim.faults.take("capacity", platform="paperspace", gpu=m.machine_type, region=m.region):
            raise SimError(400, CAPACITY_MESSAGE, "capacity")
        script = sim.state.scripts.get(m.startup_script_id or "")
        if m.startup_script_id and script is None:
            raise SimError(404, "Startup script not found", "not_found")
        if script is not None:
            m.authorized_keys = KEY_RE.findall(script.script)
            script.assigned_machine_ids.append(m.id)
        faulty = sim.faults.take("gpu_fault", platform="paperspace", gpu=m.machine_type)
        if faulty is not None:
            m.gpu_fault = faulty.kind or "xid"
        m.created_at = m.metered_to = m.modified_at = sim.now()
        sim.state.machines[m.id] = m
        if m.public_ip_type == "static":
            ip = PsIp(
                ip=next_ip(sim),
                region=m.region,
                assigned_machine_id=m.id,
                created_at=m.created_at,
                metered_to=m.created_at,
            )
            sim.state.ips[ip.ip] = ip
            m.public_ip = ip.ip
        for sub in ("disk/workspace", "disk/root", "tmp"):
            (machine_dir(sim, m.id) / sub).mkdir(parents=True, exist_ok=True)
        ev = new_event(sim, "create", m.id)
        m.gen += 1
        gen = m.gen
        sim.save()
    sim.spawn(_boot, sim, m.id, gen, ev.id, sim.options.provision_seconds, start_on_create)
    return m, ev


def _boot(sim: Simulator, mid: str, gen: int, ev_id: str, delay: float, start: bool = True) -> None:
    with sim.lock:
        _event(sim, ev_id, "in progress")
    time.sleep(delay)
    with sim.lock:
        m = sim.state.machines.get(mid)
        if m is None or m.gen != gen:
            return
        sim.accrue(m)
        if not start:
            m.state = "off"
            _event(sim, ev_id, "done")
            sim.save()
            return
        m.state = "starting"
        if m.public_ip_type == "dynamic":
            m.public_ip = next_ip(sim)
        d = machine_dir(sim, mid)
        launch = podproc.PodLaunch(
            key=sim.pod_key("paperspace", mid),
            ctl_dir=d / "ctl",
            mounts={"/workspace": d / "disk" / "workspace", "/root": d / "disk" / "root", "/tmp": d / "tmp"},
            listen=m.public_ip or "127.0.0.1",
            port=sim.ps_ssh_port,
            authorized_keys=m.authorized_keys,
            env={"PAPERSPACE_MACHINE_ID": mid},
            new_host_key=False,
            ssh_faults=sim.options.ssh_faults,
            gpu=_gpu_host(sim, m),
        )
        podisks.write(launch.ctl_dir, {"/": (d / "disk", m.disk_size)})  # one disk holds it all
        has_ip = m.public_ip is not None
    time.sleep(sim.options.boot_seconds)
    pid = sim.launch("paperspace", mid, launch, launch.listen) if has_ip else None
    with sim.lock:
        m = sim.state.machines.get(mid)
        if m is None or m.gen != gen:
            sim.kill("paperspace", mid, pid)
            return
        sim.accrue(m)
        if pid is None and has_ip and sim.options.pods:
            m.state = "off"
            sim.state.events[ev_id].error = "the machine failed to boot"
            _event(sim, ev_id, "error")
        else:
            m.state, m.sshd_pid, m.started_at, m.modified_at = "ready", pid, sim.now(), sim.now()
            _event(sim, ev_id, "done")
        sim.save()


def _gpu_host(sim: Simulator, m: PsMachine) -> GpuHost:
    """A machine type's GPUs as nvidia-smi names them: A4000x2 is two NVIDIA RTX A4000; a CPU type none."""
    g = sim.ps_prices.gpu(m.machine_type)
    if g is None or not g.vram:
        return GpuHost(model="", count=0, fault=m.gpu_fault)
    count = next((n for n, t in g.multi.items() if t == m.machine_type), 1)
    model = f"NVIDIA RTX {g.id}" if re.fullmatch(r"A\d{4}", g.id) else f"NVIDIA {g.id}"
    return GpuHost(model=model, count=count, fault=m.gpu_fault)


def start(sim: Simulator, mid: str) -> tuple[PsMachine, PsEvent]:
    with sim.lock:
        m = get_machine(sim, mid)
        if m.state in ("starting", "provisioning", "restarting"):
            raise SimError(400, "This machine is currently starting.", "conflict")
        if m.state == "stopping":
            raise SimError(400, "This machine is currently stopping.", "conflict")
        ev = new_event(sim, "start", mid)
        if m.state in ("ready", "serviceready"):
            _event(sim, ev.id, "done")
            sim.save()
            return m, ev
        if sim.state.balance_exhausted:
            raise SimError(402, "Your account balance is insufficient.", "balance")
        sim.accrue(m)
        m.state = "starting"
        m.gen += 1
        gen = m.gen
        sim.save()
    sim.spawn(_boot, sim, mid, gen, ev.id, 0.0)
    return m, ev


def stop(sim: Simulator, mid: str, event_name: str = "stop") -> tuple[PsMachine, PsEvent]:
    with sim.lock:
        m = get_machine(sim, mid)
        ev = new_event(sim, event_name, mid)
        if m.state == "off":
            _event(sim, ev.id, "done")
            return m, ev
        sim.accrue(m)
        m.state = "stopping"
        m.gen += 1
        gen = m.gen
        pid, m.sshd_pid = m.sshd_pid, None
        sim.save()
    sim.spawn(_halt, sim, mid, gen, ev.id, pid)
    return m, ev


def _halt(sim: Simulator, mid: str, gen: int, ev_id: str, pid: int | None) -> None:
    with sim.lock:
        _event(sim, ev_id, "in progress")
    sim.kill("paperspace", mid, pid, sim.options.stop_grace)
    wipe(machine_dir(sim, mid) / "tmp")
    with sim.lock:
        m = sim.state.machines.get(mid)
        if m is None or m.gen != gen:
            return
        sim.accrue(m)
        m.state, m.started_at, m.modified_at = "off", None, sim.now()
        if m.public_ip_type == "dynamic":
            m.public_ip = None
        _event(sim, ev_id, "done")
        sim.save()


def restart(sim: Simulator, mid: str) -> tuple[PsMachine, PsEvent]:
    with sim.lock:
        m = get_machine(sim, mid)
        if m.state not in ("ready", "serviceready"):
            raise SimError(400, f"This machine cannot be restarted while {m.state}.", "conflict")
        ev = new_event(sim, "restart", mid)
        sim.accrue(m)
        m.state = "restarting"
        m.gen += 1
        gen = m.gen
        pid, m.sshd_pid = m.sshd_pid, None
        sim.save()

    def work() -> None:
        sim.kill("paperspace", mid, pid)
        wipe(machine_dir(sim, mid) / "tmp")
        _boot(sim, mid, gen, ev.id, 0.0)

    sim.spawn(work)
    return m, ev


def delete(sim: Simulator, mid: str) -> tuple[PsMachine, PsEvent]:
    with sim.lock:
        m = get_machine(sim, mid)
        ev = new_event(sim, "deactivate", mid)
        sim.accrue(m)
        m.gen += 1
        pid, m.sshd_pid = m.sshd_pid, None
        m.ended_at = sim.now()
        for ip in sim.state.ips.values():
            if ip.assigned_machine_id == mid:
                ip.assigned_machine_id = None  # a static IP outlives its machine (and keeps billing)
        _event(sim, ev.id, "done")
        sim.save()
    sim.kill("paperspace", mid, pid)
    shutil.rmtree(machine_dir(sim, mid), ignore_errors=True)
    return m, ev


def force_shutdown(sim: Simulator, machine_id: str | None) -> list[str]:
    """The auto-shutdown clock fires (also injectable): the machine turns off."""
    with sim.lock:
        ids = [
            m.id
            for m in sim.state.machines.values()
            if m.ended_at is None and m.state in ("ready", "serviceready", "starting")
        ]
        if machine_id:
            ids = [i for i in ids if i == machine_id]
    for mid in ids:
        stop(sim, mid, event_name="vm-shutdown-force")
    return ids


def lose_member(sim: Simulator, machine_id: str) -> list[str]:
    """One machine of a private network is lost (its host fails): it turns off, its disk kept, the other
    machines of the network running on. Refused for a machine in no private network: a lone machine's
    loss is auto_shutdown's."""
    with sim.lock:
        m = get_machine(sim, machine_id)
        if not m.network_id:
            raise SimError(409, f"machine {machine_id} is in no private network", "conflict")
        running = m.ended_at is None and m.state in ("ready", "serviceready", "starting")
    if not running:
        return []
    stop(sim, machine_id, event_name="vm-shutdown-force")
    return [machine_id]


def on_tick(sim: Simulator, exhausted: bool) -> None:
    """Each tick (gpujob.sim.engine): machines whose auto-shutdown is due shut down."""
    auto_shutdown_due(sim)


def auto_shutdown_due(sim: Simulator) -> None:
    now = sim.now()
    with sim.lock:
        due = [
            m.id
            for m in sim.state.machines.values()
            if m.ended_at is None
            and m.state == "ready"
            and m.auto_shutdown_enabled
            and m.auto_shutdown_timeout
            and m.started_at is not None
            and now - m.started_at >= m.auto_shutdown_timeout * 3600
        ]
    for mid in due:
        stop(sim, mid, event_name="vm-shutdown-force")


# --- public IPs, snapshots, startup scripts
def claim_ip(sim: Simulator, region: str) -> PsIp:
    with sim.lock:
        ip = PsIp(ip=next_ip(sim), region=region_id(region), created_at=sim.now(), metered_to=sim.now())
        sim.state.ips[ip.ip] = ip
        sim.save()
        return ip


def get_ip(sim: Simulator, ip: str) -> PsIp:
    rec = sim.state.ips.get(ip)
    if rec is None or rec.ended_at is not None:
        raise SimError(404, "Public IP not found", "not_found")
    return rec


def assign_ip(sim: Simulator, ip: str, machine_id: str | None) -> PsIp:
    with sim.lock:
        rec = get_ip(sim, ip)
        if machine_id is not None:
            m = get_machine(sim, machine_id)
            m.public_ip, m.public_ip_type = ip, "static"
        elif rec.assigned_machine_id and rec.assigned_machine_id in sim.state.machines:
            sim.state.machines[rec.assigned_machine_id].public_ip = None
        rec.assigned_machine_id = machine_id
        sim.save()
        return rec


def release_ip(sim: Simulator, ip: str) -> None:
    with sim.lock:
        rec = get_ip(sim, ip)
        sim.accrue(rec)
        rec.ended_at = sim.now()
        m = sim.state.machines.get(rec.assigned_machine_id or "")
        if m is not None and m.public_ip == ip:
            m.public_ip = None
        sim.save()


def create_snapshot(sim: Simulator, machine_id: str, name: str) -> tuple[PsSnapshot, PsEvent]:
    with sim.lock:
        m = get_machine(sim, machine_id)
        snap = PsSnapshot(
            id=new_id(9),
            name=name,
            machine_id=machine_id,
            size_gb=m.disk_size,
            created_at=sim.now(),
            metered_to=sim.now(),
        )
        sim.state.snapshots[snap.id] = snap
        ev = new_event(sim, "snapshot-create", machine_id)
        _event(sim, ev.id, "done")
        sim.save()
        return snap, ev


def get_snapshot(sim: Simulator, sid: str) -> PsSnapshot:
    snap = sim.state.snapshots.get(sid)
    if snap is None or snap.ended_at is not None:
        raise SimError(404, "Snapshot not found", "not_found")
    return snap


def delete_snapshot(sim: Simulator, sid: str) -> tuple[PsSnapshot, PsEvent]:
    with sim.lock:
        snap = get_snapshot(sim, sid)
        sim.accrue(snap)
        snap.ended_at = sim.now()
        ev = new_event(sim, "snapshot-delete", snap.machine_id)
        _event(sim, ev.id, "done")
        sim.save()
        return snap, ev


def create_script(
    sim: Simulator, name: str, script: str, is_run_once: bool, description: str | None
) -> PsScript:
    with sim.lock:
        s = PsScript(
            id=new_id(9),
            name=name,
            script=script,
            is_run_once=is_run_once,
            description=description,
            created_at=sim.now(),
        )
        sim.state.scripts[s.id] = s
        sim.save()
        return s
