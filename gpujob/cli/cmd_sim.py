"""`gpujob sim`: run the local RunPod + Paperspace simulator in the background and drive it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command


def _dir() -> Path:
    from gpujob.config import sim_dir

    return sim_dir()


def _running() -> dict[str, Any]:
    from gpujob.errors import SimulatorError
    from gpujob.sim.daemon import read_daemon

    info = read_daemon(_dir())
    if info is None:
        raise SimulatorError(
            f"the simulator is not running (data dir {_dir()})", hint="start it: `gpujob sim up`"
        )
    return info


def _control(path: str, body: dict[str, Any] | None = None) -> Any:
    from gpujob.errors import SimulatorError

    info = _running()
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{info['runpod_url']}/_sim/{path}",
        data=data,
        method="POST" if data is not None else "GET",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("error", exc.reason)
        raise SimulatorError(f"simulator: {detail}") from exc
    except OSError as exc:
        raise SimulatorError(
            f"cannot reach the simulator: {exc}", hint="`gpujob sim status` says whether it runs, and where"
        ) from exc


def _env_lines(env: dict[str, str]) -> str:
    import shlex

    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())


@click.group(name="sim")
def command() -> None:
    """Local simulator of RunPod and Paperspace (real HTTP APIs, real SSH pods, metered billing)."""


@command.command()
@click.option(
    "--speed", type=float, default=1.0, show_default=True, help="Simulated seconds per real second."
)
@click.option(
    "--pods",
    "pod_mode",
    type=click.Choice(["auto", "namespaces", "plain"]),
    default="auto",
    show_default=True,
    envvar="GPUJOB_SIM_PODS",
    help="How pods run: namespaces (root or user namespaces), plain local sshd processes, or auto "
    "(namespaces where the kernel allows them).  [env: GPUJOB_SIM_PODS]",
)
@click.option("--no-pods", is_flag=True, help="Lifecycle only: no sshd pods, no SSH.")
@click.option("--provision-seconds", type=float, default=1.0, show_default=True)
@click.option(
    "--runpod-graphql",
    type=click.Choice(["live", "limited", "gone"]),
    default="live",
    show_default=True,
    help="RunPod's GraphQL calendar: live answers; limited answers every third call 429 (Retry-After), as "
    "RunPod's staged limits since 2026-09-17; gone answers 410 Gone, as announced for early 2027 (no spot "
    "pods, no bid floor, no balance). Fixed for the run: it never follows the simulated date.",
)
@click.option(
    "--runpod-spot",
    type=click.Choice(["offered", "withdrawn"]),
    default="offered",
    show_default=True,
    help="RunPod's spot while GraphQL answers: offered, or withdrawn (no interruptible price, rent and bid "
    "resume refused), as RunPod's docs dropped spot on 2026-05-06, months before GraphQL's 410.",
)
def up(
    speed: float,
    pod_mode: str,
    no_pods: bool,
    provision_seconds: float,
    runpod_graphql: str,
    runpod_spot: str,
) -> None:
    """Start the simulator in the background; prints its URLs and the env lines to export.

    \b
    Examples:
      gpujob sim up
      gpujob sim up --runpod-graphql gone   # rehearse 2027: spot and the balance are gone
      gpujob sim up --runpod-spot withdrawn # GraphQL answers, but RunPod offers no spot
    """

    def body() -> None:
        from gpujob.errors import SimulatorError
        from gpujob.sim.daemon import read_daemon
        from gpujob.sim.podproc import PodsUnavailable, choose

        data = _dir()
        info = read_daemon(data)
        if info is None:
            if not no_pods:
                try:
                    choose(pod_mode)
                except PodsUnavailable as exc:
                    raise SimulatorError(
                        f"cannot run simulated pods here: {exc}",
                        hint="`gpujob sim up --no-pods` runs the APIs and billing without SSH pods",
                    ) from None
            data.mkdir(parents=True, exist_ok=True)
            log = open(data / "daemon.log", "ab")  # noqa: SIM115 - handed to the child
            cmd = [
                sys.executable,
                "-m",
                "gpujob.sim",
                "--data-dir",
                str(data),
                "--speed",
                str(speed),
                "--provision-seconds",
                str(provision_seconds),
                "--pods",
                pod_mode,
                "--runpod-graphql",
                runpod_graphql,
                "--runpod-spot",
                runpod_spot,
            ]
            proc = subprocess.Popen(
                cmd + (["--no-pods"] if no_pods else []),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
            deadline = time.monotonic() + 20
            while info is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (data / "daemon.log").read_text(errors="replace")[-800:]
                    raise SimulatorError(f"the simulator failed to start:\n{tail}")
                time.sleep(0.05)
                info = read_daemon(data)
            click.echo(f"simulator started (pid {info['pid']}, data {data})", err=True)
        else:
            click.echo(f"simulator already running (pid {info['pid']})", err=True)
        click.echo(f"# pods:       {_mode_line(info)}", err=True)
        gql = info.get("runpod_graphql", "live")
        click.echo(
            f"# RunPod:     {info['runpod_url']}/v2  (GraphQL {info['runpod_url']}/graphql: {gql})", err=True
        )
        if info.get("runpod_spot", "offered") != "offered":
            click.echo("# RunPod spot: withdrawn (GraphQL answers, no spot is offered)", err=True)
        if info.get("runpod_graphql", "live") != runpod_graphql:
            click.echo(
                f"# (already running with --runpod-graphql {gql}: `gpujob sim down` to change it)", err=True
            )
        click.echo(
            f"# Paperspace: {info['paperspace_url']}/v1  (SSH port {info['paperspace_ssh_port']})", err=True
        )
        click.echo('# eval "$(gpujob sim env)"', err=True)
        click.echo(_env_lines(info["env"]))

    run_command(body)


@command.command()
def env() -> None:
    """Print export lines for the running simulator:  eval "$(gpujob sim env)\""""
    run_command(lambda: click.echo(_env_lines(_running()["env"])))


@command.command()
def down() -> None:
    """Stop the simulator and every pod process; leaves nothing running."""

    def body() -> None:
        from gpujob.sim import podproc
        from gpujob.sim.daemon import read_daemon

        data = _dir()
        info = read_daemon(data)
        if info is not None:
            pid = int(info["pid"])
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        strays = podproc.sweep(str(data.resolve()))  # a crashed daemon's pods
        (data / "daemon.json").unlink(missing_ok=True)
        click.echo(
            "simulator stopped"
            if info
            else "simulator was not running" + (f"; killed {strays} stray pod(s)" if strays else "")
        )

    run_command(body)


def _mode_line(info: dict[str, Any]) -> str:
    """Which pod mode the running simulator uses, in words, and why (what ruled out the others)."""
    from gpujob.sim.podproc import PodMode

    name = info.get("pod_mode", "off")
    if name == "off" or not info.get("pods", True):
        return "off: APIs and billing only, no SSH (started with --no-pods)"
    why = info.get("pod_mode_why", "")
    return f"{name}: {PodMode(name, why).describe()}" + (f" ({why})" if why else "")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@command.command()
def status() -> None:
    """Is the simulator running; where; what it holds; which faults are active."""

    def body() -> None:
        from gpujob.sim.daemon import read_daemon
        from gpujob.sim.fault_words import fault_lines

        info = read_daemon(_dir())
        if info is None:
            click.echo(f"simulator: not running (data dir {_dir()})")
            return
        state = _control("state")
        pods = [p for p in state["pods"].values() if p.get("ended_at") is None]
        machines = [m for m in state["machines"].values() if m.get("ended_at") is None]
        click.echo(
            f"simulator: running (pid {info['pid']}, data dir {info['data_dir']})\n  pods        {_mode_line(info)}"
        )
        click.echo(
            f"  RunPod      {info['runpod_url']}/v2   pods: "
            + (", ".join(f"{p['id']} {p['status']}" for p in pods) or "none")
        )
        click.echo(
            f"  Paperspace  {info['paperspace_url']}/v1   machines: "
            + (", ".join(f"{m['id']} {m['state']}" for m in machines) or "none")
        )
        click.echo("  faults      " + fault_lines(_control("faults")["active"]))

    run_command(body)


@command.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def bill(fmt: str) -> None:
    """The metered bill: line items per resource and totals (USD, simulated clock)."""

    def body() -> None:
        data = _control("bill")
        if fmt == "json":
            click.echo(json.dumps(data, indent=2))
            return
        from gpujob.cli.options import color_wanted
        from gpujob.table import table

        color = color_wanted(False)
        rows = [
            [
                it["platform"],
                it["kind"],
                it["id"],
                it["item"],
                f"{it['usd']:.4f}",
                f"{it['rate_per_hour']:.4f}",
            ]
            for it in data["items"]
        ]
        width = shutil.get_terminal_size().columns if color else None
        header = ["platform", "kind", "id", "item", "USD", "USD/h now"]
        click.echo("\n".join(table(header, rows, right=[4, 5], color=color, width=width)))
        t = data["totals"]
        click.echo(
            f"total: ${t['total']:.4f}  (RunPod ${t['runpod']:.4f}, Paperspace ${t['paperspace']:.4f})"
        )

    run_command(body)


def _value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _inject_help() -> str:
    """One fault per line with its options (click keeps a paragraph that starts with \\b as written)."""
    from gpujob.sim.fault_options import OPTIONS

    rows = []
    for name, (opts, what) in OPTIONS.items():
        flags = " ".join(f"--{o.replace('_', '-')}" for o in opts)
        rows.append(f"  {name:<23} {what}" + (f"\n  {'':<23}   {flags}" if flags else ""))
    return "\n".join(
        [
            "Inject a fault into the running simulator. Options are --key value pairs; an option the fault",
            "does not take is refused.",
            "",
            "\b",
            "Faults (and their options):",
            *rows,
            "",
            "\b",
            "Examples:",
            "  gpujob sim inject capacity --count 2 --gpu A40",
            "  gpujob sim inject preempt --pod-id ID --grace 5",
            "  gpujob sim inject migrate --pod-id ID   (a stopped pod moves: new id and IP, same volume)",
            "  gpujob sim inject gpu_fault --kind xid --count 1   (the next pod logs Xid 79)",
            "  gpujob sim inject http_error --status 403 --path /v2/pods --method POST   (a 403 on create)",
        ]
    )


@command.command(context_settings={"ignore_unknown_options": True}, help=_inject_help())
@click.argument("fault")
@click.argument("params", nargs=-1, type=click.UNPROCESSED)
def inject(fault: str, params: tuple[str, ...]) -> None:
    def body() -> None:
        from gpujob.errors import SimulatorError
        from gpujob.sim.fault_options import FAULTS, unknown_options

        if fault not in FAULTS:
            raise SimulatorError(
                f"unknown fault {fault!r}; known: {', '.join(FAULTS)}", hint="`gpujob sim inject --help`"
            )
        payload: dict[str, Any] = {"fault": fault}
        items = list(params)
        while items:
            key = items.pop(0)
            if not key.startswith("--") or not items:
                raise SimulatorError(
                    f"expected --key value pairs, got {key!r}", hint="`gpujob sim inject --help`"
                )
            payload[key[2:].replace("-", "_")] = _value(items.pop(0))
        wrong = unknown_options(fault, payload)
        if wrong is not None:
            raise SimulatorError(wrong, hint="`gpujob sim inject --help`")
        click.echo(json.dumps(_control("inject", payload)))

    run_command(body)


@command.group()
def clock() -> None:
    """The simulated clock."""


@clock.command()
@click.argument("duration")
def advance(duration: str) -> None:
    """Move the simulated clock forward, e.g. 2h, 90m, 1h30m, 3600."""

    def body() -> None:
        from gpujob.errors import SimulatorError
        from gpujob.sim.clock import iso, parse_duration

        try:
            seconds = parse_duration(duration)
        except ValueError as exc:
            raise SimulatorError(str(exc)) from exc
        now = _control("clock/advance", {"seconds": seconds})["now"]
        click.echo(f"simulated clock advanced {seconds:g} s; now {iso(now)}")

    run_command(body)
