"""The survival matrix in every pod mode this machine can run, asserted on disk and over real SSH.

root-namespaces and user-namespaces differ in who builds the pod (root, or an ordinary user in an
unprivileged user namespace); plain pods are local sshd processes with the pod's paths mapped. In
each mode the same writes must land in the same pod directories, survive or vanish with the same
verbs, and a stop must kill every process the pod started. The last test runs the user-namespace
case again as an unprivileged user (nobody), which is what a newcomer's laptop does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.sim import podproc
from gpujob.sim.testing import Sim, running_simulator
from tests.readable import readable_copy
from tests.sim.conftest import create_pod, ssh, wait_for, wait_pod


def _image_python_dirs() -> set[str]:
    """What the simulated image's Python puts in /root when it lives there (a pyenv: gpujob.sim.rp_engine)."""
    prefix = Path(sys.prefix).resolve()
    root = Path("/root")
    return {prefix.relative_to(root).parts[0]} if prefix.is_relative_to(root) else set()


IMAGE_PYTHON = _image_python_dirs()


def _need(mode: str) -> None:
    try:
        got = podproc.choose(mode)
    except podproc.PodsUnavailable as exc:
        why = str(exc)
    else:
        if got.name == mode:
            return
        why = got.why
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run {mode} pods: {why}")
    pytest.skip(f"{mode} pods cannot run on this machine: {why}")


@pytest.fixture(params=list(podproc.MODES))
def mode_sim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sim]:
    _need(request.param)
    with running_simulator(
        tmp_path / "sim",
        speed=0,
        provision_seconds=0.01,
        boot_seconds=0.0,
        preempt_grace=3.0,
        pod_mode=request.param,
    ) as s:
        assert s.engine.pod_mode is not None and s.engine.pod_mode.name == request.param
        yield s


def _client(sim: Sim, platform: str) -> httpx.Client:
    url = sim.env[f"GPUJOB_{platform.upper()}_API_URL"]
    key = sim.env[f"{platform.upper()}_API_KEY"]
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=20)


def _ssh(key: Path, d: dict, command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return ssh(key, d["host"], d["port"], command, check=check, user=d["username"])


def _gone(pid: int) -> bool:
    return not podproc._alive(pid)


def test_runpod_survival_matrix_on_disk(mode_sim: Sim, ssh_key) -> None:
    key, pub = ssh_key
    sim = mode_sim
    with _client(sim, "runpod") as rp:
        pod = wait_pod(rp, create_pod(rp, pub)["id"])
        d = pod["ssh"]["direct"]
        assert d["username"] == sim.engine.ssh_user
        pod_dir = sim.data_dir / "runpod" / "pods" / pod["id"]
        # A process started in the pod, detached from the session the way tmux / nohup runs are.
        out = _ssh(
            key,
            d,
            "echo kept > /workspace/a && echo gone > /root/b && echo gone > /tmp/c && cd && pwd > /workspace/home"
            " && (setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > /workspace/sleeper)",
        )
        assert out.returncode == 0, out.stderr
        assert (pod_dir / "volume" / "a").read_text() == "kept\n"
        assert (pod_dir / "container" / "root" / "b").read_text() == "gone\n"
        assert (pod_dir / "container" / "tmp" / "c").read_text() == "gone\n"
        assert not Path("/workspace/a").exists()  # nothing landed on the host's own paths
        home = (pod_dir / "volume" / "home").read_text().strip()
        assert home in ("/root", str((pod_dir / "container" / "root").resolve()))
        sleeper = _host_pid(sim, pod, int((pod_dir / "volume" / "sleeper").read_text()))
        assert not _gone(sleeper)

        assert rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).json()["status"] == "EXITED"
        assert _gone(sleeper)  # a stop kills everything the pod started
        assert (pod_dir / "volume" / "a").exists()  # the pod volume survives a stop
        assert list((pod_dir / "container" / "root").iterdir()) == []  # the container disk does not
        assert list((pod_dir / "container" / "tmp").iterdir()) == []

        rp.post(f"/pods/{pod['id']}/action", json={"action": "start"}).raise_for_status()
        d2 = wait_pod(rp, pod["id"])["ssh"]["direct"]
        seen = _ssh(key, d2, "cat /workspace/a; ls -A /root; ls -A /tmp").stdout.split()
        assert [x for x in seen if x not in IMAGE_PYTHON] == ["kept"]  # the image's own Python is no survivor
        assert rp.delete(f"/pods/{pod['id']}").status_code == 204
        assert not pod_dir.exists()
        assert _ssh(key, d2, "true", check=False).returncode != 0
    assert podproc.find_strays(str(sim.data_dir)) == []


def test_network_volume_and_preemption_grace(mode_sim: Sim, ssh_key) -> None:
    key, pub = ssh_key
    sim = mode_sim
    with _client(sim, "runpod") as rp:
        vol = rp.post("/network-volumes", json={"name": "gpujob-m", "size": 10, "dataCenter": "EU-RO-1"})
        vid = vol.json()["id"]
        mounts = {"network": [{"volumeId": vid, "path": "/workspace"}]}
        pod = wait_pod(rp, _spot_pod(sim, pub, vid))
        d = pod["ssh"]["direct"]
        # A "training run" that saves on SIGTERM, as the job contract asks.
        run = (
            "mkdir -p /workspace/ckpt && cd /workspace/ckpt && "
            '{ setsid sh -c \'trap "echo saved > \\$PWD/on_term; exit 0" TERM; echo up > ready; '
            "while :; do sleep 0.05; done' </dev/null >/dev/null 2>&1 & }"
        )
        _ssh(key, d, run)
        vol_dir = sim.data_dir / "runpod" / "volumes" / vid
        wait_for(lambda: (vol_dir / "ckpt" / "ready").exists(), bool)
        sim.inject("preempt", pod_id=pod["id"])
        assert (vol_dir / "ckpt" / "on_term").read_text() == "saved\n"  # SIGTERM, then the grace
        assert rp.get(f"/pods/{pod['id']}").json()["status"] == "EXITED"
        assert rp.post(f"/pods/{pod['id']}/action", json={"action": "terminate"}).status_code == 204
        pod2 = wait_pod(rp, create_pod(rp, pub, mounts=mounts)["id"])
        out = _ssh(key, pod2["ssh"]["direct"], "cat /workspace/ckpt/on_term").stdout
        assert out == "saved\n"  # the network volume outlives the pod


def test_paperspace_survival_matrix_on_disk(mode_sim: Sim, ssh_key) -> None:
    key, pub = ssh_key
    sim = mode_sim
    with _client(sim, "paperspace") as ps:
        script = ps.post(
            "/startup-scripts",
            json={
                "name": "gpujob-m-ssh",
                "script": f"echo '{pub}' >> ~/.ssh/authorized_keys\n",
                "isRunOnce": True,
            },
        ).json()
        body = {
            "name": "gpujob-m",
            "machineType": "A4000",
            "templateId": "t0nspur5",
            "diskSize": 50,
            "region": "East Coast (NY2)",
            "startupScriptId": script["id"],
            "startOnCreate": True,
        }
        mid = ps.post("/machines", json=body).json()["data"]["id"]
        m = wait_for(lambda: ps.get(f"/machines/{mid}").json(), lambda m: m["state"] == "ready")
        d = {"host": m["publicIp"], "port": int(sim.env["GPUJOB_PAPERSPACE_SSH_PORT"])}
        d["username"] = sim.env["GPUJOB_PAPERSPACE_SSH_USER"]
        _ssh(key, d, "echo w > /workspace/a; echo r > /root/b; echo t > /tmp/c")
        mdir = sim.data_dir / "paperspace" / "machines" / mid
        assert (mdir / "disk" / "workspace" / "a").exists() and (mdir / "tmp" / "c").exists()
        ev = ps.patch(f"/machines/{mid}/stop", json={}).json()["event"]
        wait_for(lambda: ps.get(f"/machine-events/{ev['id']}").json(), lambda e: e["state"] == "done")
        assert (mdir / "disk" / "root" / "b").read_text() == "r\n"  # the boot disk survives a stop
        assert list((mdir / "tmp").iterdir()) == []  # /tmp does not
        ps.patch(f"/machines/{mid}/start", json={}).raise_for_status()
        m2 = wait_for(lambda: ps.get(f"/machines/{mid}").json(), lambda m: m["state"] == "ready")
        d["host"] = m2["publicIp"]
        assert _ssh(key, d, "cat /workspace/a /root/b; ls -A /tmp").stdout.split() == ["w", "r"]
        ps.delete(f"/machines/{mid}").raise_for_status()
        assert not mdir.exists()


def _spot_pod(sim: Sim, pub: str, volume_id: str) -> str:
    """A spot pod comes from GraphQL podRentInterruptable, as gpujob creates it."""
    q = "mutation R($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { id } }"
    inp = {
        "gpuTypeId": "NVIDIA A40",
        "bidPerGpu": 5,
        "name": "gpujob-m-spot",
        "imageName": "i",
        "networkVolumeId": volume_id,
        "volumeMountPath": "/workspace",
        "ports": "22/tcp",
        "env": [{"key": "PUBLIC_KEY", "value": pub}],
    }
    r = httpx.post(
        sim.env["GPUJOB_RUNPOD_GRAPHQL_URL"],
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        json={"query": q, "variables": {"input": inp}},
    )
    return str(r.json()["data"]["podRentInterruptable"]["id"])


def _host_pid(sim: Sim, pod: dict, pid_in_pod: int) -> int:
    """The host pid of a process the pod reported (a pid namespace numbers its own processes)."""
    init = sim.engine.state.pods[pod["id"]].sshd_pid
    assert init is not None
    key = sim.engine.pod_key("runpod", pod["id"])
    for pid in podproc.members(init, key):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        nspid = next((line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:")), "")
        if nspid == str(pid_in_pod):
            return pid
    raise AssertionError(f"no process {pid_in_pod} in pod {pod['id']}")


def test_a_pod_made_by_an_unprivileged_user(ssh_key) -> None:
    """What a newcomer's laptop does: `nobody` builds a user-namespace pod (tests/sim/unpriv_pod.py,
    standard library only), and we log in as root, write to its disks and see them on the host."""
    if os.geteuid() != 0:
        _need("user-namespaces")  # we are the ordinary user: the parametrized tests above are this case
        return
    _need("user-namespaces")
    python = _python_for(65534)
    top = Path(tempfile.mkdtemp(prefix="gpujob-unpriv-"))  # pytest's tmp dirs are private to root
    os.chmod(top, 0o755)
    # nobody runs a copy: a checkout inside a private (0700) directory is not readable to it.
    code = readable_copy("gpujob", "tests/sim/unpriv_pod.py")
    base = top / "pod"
    base.mkdir()
    (base / "authorized_keys").write_text(ssh_key[1] + "\n")
    os.chown(base, 65534, 65534)
    os.chown(base / "authorized_keys", 65534, 65534)
    unpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", python, "-I"]
    with _helper_pod([*unpriv, str(code / "tests" / "sim" / "unpriv_pod.py"), str(code), str(base)]) as d:
        out = _ssh(
            ssh_key[0], d, "id -un; echo kept > /workspace/a; echo c > /root/b; ps -e | wc -l"
        ).stdout.split()
        assert out[0] == "root" and int(out[1]) < 10  # root by name, alone in its pid namespace
        assert (base / "volume" / "a").read_text() == "kept\n"
        assert (base / "container" / "b").read_text() == "c\n"
        assert (base / "volume" / "a").stat().st_uid == 65534  # it is nobody's file on the host
        assert not Path("/workspace/a").exists()
    assert podproc.find_strays(str(base)) == []
    shutil.rmtree(top)
    shutil.rmtree(code)


@contextmanager
def _helper_pod(argv: list[str]) -> Iterator[dict[str, Any]]:
    """tests/sim/unpriv_pod.py run by `argv`: it builds a user-namespace pod, prints {"mode", "port"} as
    one JSON line and keeps the pod until its stdin closes, then kills it and exits 0. Yields the pod's
    SSH endpoint; on leaving, the helper must have exited 0."""
    helper = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = helper.stdout.readline() if helper.stdout else ""
        assert line, helper.stderr.read() if helper.stderr else ""
        info = json.loads(line)
        assert info["mode"] == "user-namespaces", info
        yield {"host": "127.0.0.1", "port": info["port"], "username": "root"}
    finally:
        if helper.stdin:
            helper.stdin.close()  # the helper kills its pod and exits
        helper.wait(timeout=30)
    assert helper.returncode == 0, helper.stderr.read() if helper.stderr else ""


def _python_for(uid: int) -> str:
    """A Python >= 3.9 that `uid` can run (ours may live under root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        ok = subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--",
                candidate,
                "-I",
                "-c",
                "import sys; assert sys.version_info >= (3, 9)",
            ],
            capture_output=True,
            cwd="/",
        )
        if ok.returncode == 0:
            return candidate
    pytest.fail("no Python that an unprivileged user can run was found (tried ours, /usr/bin/python3)")


def test_a_user_namespace_pod_survives_the_host_rewriting_etc_passwd(ssh_key) -> None:
    """useradd (any passwd change) replaces /etc/passwd, /etc/group and /etc/shadow by a rename. A pod
    whose own passwd was bind-mounted over the host's lost it then (the rename detaches the mount in
    every namespace) and refused root ("account is locked"). The host here is a private mount namespace
    whose /etc is a copy, so the real /etc is never touched."""
    if os.geteuid() != 0:
        pytest.skip("binding a private /etc needs root (the parametrized user-namespace tests cover a user)")
    _need("user-namespaces")
    top = Path(tempfile.mkdtemp(prefix="gpujob-etc-"))
    os.chmod(top, 0o755)
    etc = top / "etc"
    shutil.copytree("/etc", etc, symlinks=True, ignore_dangling_symlinks=True)
    base = top / "pod"
    base.mkdir()
    (base / "authorized_keys").write_text(ssh_key[1] + "\n")
    code = readable_copy("gpujob", "tests/sim/unpriv_pod.py")
    script = f"mount --bind {etc} /etc && exec {sys.executable} -I {code}/tests/sim/unpriv_pod.py {code} {base} user-namespaces"
    with _helper_pod(["unshare", "--mount", "--propagation", "private", "sh", "-c", script]) as d:
        assert _ssh(ssh_key[0], d, "id -un").stdout.strip() == "root"
        for name, extra in (
            ("passwd", "newcomer:x:4242:4242::/home/newcomer:/bin/sh"),
            ("group", "newcomer:x:4242:"),
            ("shadow", "newcomer:!:19000:0:99999:7:::"),
        ):
            new = etc / f"{name}+"
            new.write_text((etc / name).read_text() + extra + "\n")
            os.replace(new, etc / name)  # what useradd does: a new file renamed over the old one
        assert "newcomer" in (etc / "passwd").read_text()
        again = _ssh(ssh_key[0], d, "id -un; grep -c newcomer /etc/passwd || true", check=False)
        assert again.returncode == 0, again.stderr
        assert again.stdout.split() == ["root", "0"]  # root still, from the pod's own passwd
    shutil.rmtree(top)
    shutil.rmtree(code)
