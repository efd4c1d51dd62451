"""Namespace pods: the sshd is PID 1 of its own mount+pid namespace, in a root of its own.

The pod's root is a fresh tmpfs holding the host's top-level directories (recursive binds), except
the pod's mount targets (/workspace, /root, /tmp, ...), which are binds of the pod's own directories.
So nothing is created on the host (no /workspace), and an ordinary user can do all of it.

As root: `unshare --mount --pid` and sshd runs as root, as on a real pod.
As an ordinary user: `unshare --user --map-root-user --mount --pid` does the mounts as the namespace's
root; then a nested user namespace maps that root back to the user's own uid before sshd starts.
The reason: an sshd running as uid 0 insists on dropping privileges with setgroups(), which an
unprivileged user namespace forbids, while an sshd running as a plain uid serves that uid. Inside the
pod that uid is called root (the pod gets its own /etc/passwd and /etc/group), so `ssh root@pod`
works as on RunPod; `id -u` shows the user's uid, not 0.

Killing PID 1 makes the kernel kill every process in the pod (tmux, the training run)."""

from __future__ import annotations

import os
import pwd
import shlex
import subprocess
import tempfile
from pathlib import Path

from gpujob.sim.podlaunch import MARKER, PodLaunch, sshd_config, sshd_path, stall_shim

CTL_MOUNT = "/.gpujob-pod"  # where a pod sees its control dir (host keys, sshd_config, pod key)


def _host_entries(skip: set[str]) -> list[tuple[str, str]]:
    """(name, kind) of the host's top-level entries a pod root carries over: dir, link or file."""
    out = []
    for name in sorted(os.listdir("/")):
        if name in skip or name == "proc":
            continue
        p = Path("/") / name
        kind = "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
        out.append((name, kind))
    return out


HOST_ETC = "/.gpujob-host-etc"  # where a pod with its own /etc sees the host's


def root_script(
    root: str, mounts: dict[str, Path], ctl: str | None, own_etc: dict[str, Path] | None = None
) -> list[str]:
    """Shell lines that build a pod root at `root` (a directory) and pivot into it.

    `own_etc`: files the pod's /etc holds as copies of its own (name -> source). /etc is then a
    directory of the pod's own root whose other entries are symlinks into the host's /etc (bound at
    HOST_ETC). A bind mount over /etc/passwd would not do: the host replaces that file by a rename
    (useradd, any passwd change), which detaches every mount on it in every namespace, and the pod
    would be left with the host's passwd, where its sshd's uid is not root."""
    q = shlex.quote
    tops = {t.strip("/").split("/")[0] for t in mounts if t.strip("/").count("/") == 0}
    if own_etc is not None:
        tops.add("etc")
    lines = [
        "set -e",
        'PATH="$PATH:/usr/sbin:/sbin"',  # pivot_root lives in sbin, which an ordinary user's PATH lacks
        "mount --make-rprivate /",
        f"R={q(root)}",
        'mount -t tmpfs -o mode=755 gpujob-pod "$R"',
    ]
    for name, kind in _host_entries(tops):
        src, dst = q("/" + name), f'"$R"/{q(name)}'
        if kind == "link":
            lines.append(f"ln -s {q(os.readlink('/' + name))} {dst}")
        elif kind == "dir":
            lines.append(f"mkdir {dst} && mount --rbind {src} {dst}")
        else:
            lines.append(f"touch {dst} && mount --bind {src} {dst}")
    lines.append('mkdir "$R/proc" && mount -t proc proc "$R/proc"')
    if own_etc is not None:
        lines += [
            f'mkdir "$R"{HOST_ETC} && mount --rbind /etc "$R"{HOST_ETC}',
            # Relative links (../.gpujob-host-etc/NAME) resolve the same before and after the pivot.
            f'mkdir "$R/etc" && (cd "$R/etc" && find ..{HOST_ETC} -mindepth 1 -maxdepth 1 -exec ln -s -t . {{}} +)',
        ]
        for name, source in own_etc.items():
            lines.append(f'rm -f "$R/etc"/{q(name)} && cp {q(str(source))} "$R/etc"/{q(name)}')
    for target, source in mounts.items():
        lines.append(f'mkdir -p "$R"{q(target)} && mount --bind {q(str(source))} "$R"{q(target)}')
    if ctl is not None:
        lines.append(f'mkdir "$R"{CTL_MOUNT} && mount --bind {q(ctl)} "$R"{CTL_MOUNT}')
    lines += ['mkdir "$R/.old-root"', 'cd "$R"', "pivot_root . .old-root", "cd /", "umount -l /.old-root"]
    lines.append("rmdir /.old-root")
    return lines


def inner_ids() -> tuple[int, int]:
    """The uid/gid sshd runs as in a user-namespace pod: the user's own (root, who has no need of this
    mode but may test it, gets 1000, since an sshd as uid 0 needs setgroups)."""
    return os.getuid() or 1000, os.getgid() or 1000


def _identity_files(ctl: Path) -> tuple[int, int]:
    """passwd/group for a user-namespace pod, in which the sshd's uid and gid are named root."""
    uid, gid = inner_ids()
    shell = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
    users = [f"root:x:{uid}:{gid}:root:/root:{shell}"]
    for line in Path("/etc/passwd").read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[0] != "root" and parts[2] != str(uid):
            users.append(line)
    groups = [f"root:x:{gid}:"]
    for line in Path("/etc/group").read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[0] != "root" and parts[2] != str(gid):
            groups.append(line)
    (ctl / "passwd").write_text("\n".join(users) + "\n")
    (ctl / "group").write_text("\n".join(groups) + "\n")
    # Readable by the pod's sshd: otherwise glibc falls through to nss-systemd, which reports root's
    # password as locked ("!*"), and sshd refuses a locked account even for key logins.
    (ctl / "shadow").write_text("root:*:19000:0:99999:7:::\n")
    return uid, gid


def spawn(launch: PodLaunch, *, user_ns: bool) -> subprocess.Popen[bytes]:
    """Start the pod's namespaces + sshd. Returns the `unshare` process; the sshd is its only child.
    The boot script's errors go to <ctl>/boot.log."""
    ctl = launch.ctl_dir
    (ctl / "rootfs").mkdir(exist_ok=True)
    (ctl / "sshd_config").write_text(sshd_config(launch, CTL_MOUNT, stall_shim(launch, CTL_MOUNT)))
    own_etc = None
    if user_ns:
        uid, gid = _identity_files(ctl)
        own_etc = {f: ctl / f for f in ("passwd", "group", "shadow")}
    script = root_script(str(ctl / "rootfs"), launch.mounts, str(ctl), own_etc)
    sshd = f"{sshd_path()} -D -f {CTL_MOUNT}/sshd_config -E {CTL_MOUNT}/sshd.log"
    if user_ns:
        script.append(f"exec unshare --user --map-user={uid} --map-group={gid} {sshd}")
    else:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation dir
        script.append(f"exec {sshd}")
    flags = ["--user", "--map-root-user"] if user_ns else []
    cmd = ["unshare", *flags, "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", "\n".join(script)]
    with open(ctl / "boot.log", "wb") as log:
        return subprocess.Popen(
            [*cmd, MARKER, launch.key],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def probe(*, user_ns: bool) -> tuple[bool, str]:
    """Build a pod root and start a process in it the way a pod does; (works, why not)."""
    with tempfile.TemporaryDirectory(prefix="gpujob-probe-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        script = root_script(str(Path(tmp) / "root"), {"/workspace": work}, None)
        (Path(tmp) / "root").mkdir()
        last = "echo $$ > /workspace/pid"
        if user_ns:
            uid, gid = inner_ids()
            last = f"exec unshare --user --map-user={uid} --map-group={gid} sh -c {shlex.quote(last)}"
        flags = ["--user", "--map-root-user"] if user_ns else []
        cmd = [
            "unshare",
            *flags,
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "sh",
            "-c",
            "\n".join([*script, last]),
        ]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"unshare failed: {exc}"
        try:
            pid = (work / "pid").read_text().strip()
        except OSError:
            pid = ""
        if res.returncode != 0 or pid != "1":
            err = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            what = "unprivileged user namespaces" if user_ns else "mount+pid namespaces"
            return False, f"this kernel does not allow {what} here ({err})"
    who = pwd.getpwuid(os.getuid()).pw_name
    return True, f"{'user' if user_ns else 'root'} namespaces work for {who}"
