"""Catalogue section F (secrets) and security points 3.1 / 3.4, end to end against the simulator.

Canaries: the simulator accepts only canary API keys, the shell holds a canary value for HF_TOKEN (named
in run.secrets), and the live account holds a pod whose env carries the canary (F4: the platform hands
secrets back in listings). Every command that exists outside the apply area runs in every format, with
and without injected faults; its stdout, stderr, the log records at DEBUG (httpx/httpcore included),
every file it wrote under the project, and every request on the wire are searched for the canaries."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpujob.providers.base import LaunchRequest
from gpujob.providers.registry import open_providers
from gpujob.sim.http import Response
from tests.owners import PROJECT, machine, pin_project
from tests.reliability.reliability_kit import (
    CANARIES,
    IMAGE,
    PAPERSPACE_JOB,
    PS_CANARY,
    RP_CANARY,
    RUNPOD_JOB,
    SECRET_CANARY,
    FastClock,
    RecordingSim,
    cli,
    files_under,
    leaks,
    subprocess_cli,
    write_job,
)

COMMANDS: list[list[str]] = [
    ["validate"],
    ["validate", "--format", "json"],
    ["plan"],
    ["plan", "--format", "markdown"],
    ["plan", "--format", "json", "-o", "plan.json"],
    ["plan", "--format", "text", "-o", "out/plan-text.json"],
    ["state", "bert.job.yaml"],
    ["state", "bert.job.yaml", "--format", "json"],
    ["state", "resnet.job.yaml", "--format", "json"],
    ["audit"],
    ["audit", "--format", "markdown"],
    ["audit", "--format", "json", "--fix", "-o", "fix.json"],
    ["cost"],
    ["cost", "--format", "json"],
]


def seed_account(env: dict[str, str]) -> None:
    """A pod of this repo's job whose env holds the canary secret, plus one someone else made."""

    async def go() -> None:
        async with open_providers({"runpod"}, env=env, clock=FastClock()) as providers:
            rp: Any = providers["runpod"]
            for name in (machine("bert"), "notebook"):
                marker = {"GPUJOB_PROJECT": PROJECT} if name != "notebook" else {}
                request = LaunchRequest(
                    name=name,
                    gpu_id="NVIDIA A100 80GB PCIe",
                    image=IMAGE,
                    region="EU-RO-1",
                    volume_gb=100,
                    env={"HF_TOKEN": SECRET_CANARY, "WANDB_API_KEY": SECRET_CANARY + "-wandb", **marker},
                )
                await rp._create_once(request.name, lambda r=request: rp._create_on_demand(r), rp._pods_named)

    asyncio.run(go())


@pytest.fixture
def project(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "project"
    write_job(root, RUNPOD_JOB, "bert.job.yaml")
    write_job(root, PAPERSPACE_JOB, "resnet.job.yaml")
    (root / "out").mkdir()
    pin_project(Path(env["GPUJOB_STATE_DIR"]))
    seed_account(env)
    return root


def sweep(
    rsim: RecordingSim, project: Path, runs: list[tuple[list[str], Any]], caplog: pytest.LogCaptureFixture
) -> None:
    texts = [f"{args}: {run.stdout}\n{run.stderr}" for args, run in runs] + [caplog.text]
    texts += [f"{path}: {text}" for path, text in files_under(project)]
    texts += [f"{w.method} {w.path}?{w.query}" for w in rsim.api_requests()]
    found = leaks(texts)
    assert not found, "\n".join(found[:5])
    for w in rsim.api_requests():  # F2: the key travels in the Authorization header, nowhere else
        assert w.headers.get("authorization", "").startswith(("Bearer rpa_CANARY", "Bearer ps_CANARY")), (
            w.path
        )


def run_all(
    project: Path, env: dict[str, str], commands: list[list[str]] = COMMANDS
) -> list[tuple[list[str], Any]]:
    runs = []
    for args in commands:
        run = cli(args, cwd=project, env=env)
        assert "Traceback" not in run.output, (args, run.output)
        runs.append((args, run))
    return runs


# ---- F1/F2/F4/F5: every command, every format, nothing leaks


def test_f_no_canary_anywhere_on_the_happy_path(
    project: Path, env: dict[str, str], rsim: RecordingSim, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "gpujob"):
        logging.getLogger(name).setLevel(logging.DEBUG)  # --debug-style logging must still be clean
    runs = run_all(project, env)
    by_args = {tuple(a): r for a, r in runs}
    assert (
        by_args[("plan",)].exit_code in (0, 1, 2)
        and machine("bert") in by_args[("state", "bert.job.yaml")].stdout
    )
    assert (project / "plan.json").is_file() and (project / "fix.json").is_file()
    assert (
        "HF_TOKEN" in by_args[("plan",)].stdout
        or "HF_TOKEN" in by_args[("plan", "--format", "markdown")].stdout
    )
    assert len(rsim.api_requests()) > 20  # the sweep below looked at real traffic
    sweep(rsim, project, runs, caplog)


def test_f_subprocess_plan_and_state_leak_nothing(
    project: Path, env: dict[str, str], rsim: RecordingSim
) -> None:
    outputs = []
    for args in (
        ["plan", "--format", "json", "-o", "sub.json"],
        ["state", "bert.job.yaml", "--format", "json"],
    ):
        run = subprocess_cli(args, cwd=project, env=env)
        assert run.exit_code in (0, 1, 2) and "Traceback" not in run.stderr, run.stderr
        outputs += [run.stdout, run.stderr]
    found = leaks(outputs + [text for _, text in files_under(project)])
    assert not found, "\n".join(found[:5])


# ---- F1/F6: error paths (the platform echoes the key and the secret back), faults, rejected keys


def test_f_error_paths_leak_nothing(
    project: Path, env: dict[str, str], rsim: RecordingSim, caplog: pytest.LogCaptureFixture, fast_clock: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = f"bad request for key {RP_CANARY} / {PS_CANARY} with env HF_TOKEN={SECRET_CANARY}"
    answers = [
        Response(500, {"detail": echo, "message": echo}),
        Response(400, {"detail": echo, "message": echo}),
        Response(403, {"detail": echo, "message": echo}),
        Response(200, f"<html>{echo}</html>".encode(), content_type="text/html"),
        Response(200, {"error": echo}),
    ]
    runs: list[tuple[list[str], Any]] = []
    commands = [
        ["plan"],
        ["plan", "--format", "json", "-o", "err.json"],
        ["state", "bert.job.yaml"],
        ["audit"],
        ["cost"],
    ]
    for answer in answers:

        def tamper(platform: str, method: str, path: str, response: Any, a: Response = answer) -> Any:
            return a if method == "GET" and path in ("/v2/pods", "/v1/machines") else response

        rsim.rewrite = tamper
        for args, run in run_all(project, env, commands):
            assert run.exit_code == 1, (args, run.output)
            runs.append((args, run))
    rsim.rewrite = None
    # A key the platform rejects: the message names the variable, never the value.
    wrong = {**env, "RUNPOD_API_KEY": RP_CANARY + "x", "PAPERSPACE_API_KEY": PS_CANARY + "x"}
    for args, run in run_all(project, wrong, commands):
        assert run.exit_code == 1 and "_API_KEY" in run.output, (args, run.output)
        runs.append((args, run))
    # A run.secrets name that is unset: named, the environment not dumped.
    for args, run in run_all(project, {**env, "HF_TOKEN": ""}, [["plan"]]):
        assert "HF_TOKEN" in run.output
        runs.append((args, run))
    sweep(rsim, project, runs, caplog)
    assert not leaks([r.output for _, r in runs], [RP_CANARY + "x", PS_CANARY + "x"])


def test_f_exception_text_from_httpx_is_sanitised(tmp_path: Path, fast_clock: Any) -> None:
    # F6: a connect failure whose text would carry the URL: gpujob prints the call, not credentials.
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB, "bert.job.yaml")
    # 0.0.0.0 (routed here, not loopback): a refused loopback address is the simulator's, reported
    # without httpx's text at all.
    env = {
        "GPUJOB_RUNPOD_API_URL": "http://user:" + SECRET_CANARY + "@0.0.0.0:9/v2",
        "GPUJOB_RUNPOD_GRAPHQL_URL": "http://0.0.0.0:9/graphql",
        "RUNPOD_API_KEY": RP_CANARY,
        "HF_TOKEN": SECRET_CANARY,
    }
    run = cli(["state", "bert.job.yaml"], cwd=project, env=env)
    assert run.exit_code == 1 and "cannot connect" in run.output, run.output
    assert not leaks([run.output]), run.output


# ---- 3.1: library loggers quiet by default; 3.4: files gpujob writes are private


def test_3_1_httpx_and_httpcore_loggers_are_quiet() -> None:
    """Importing gpujob's HTTP layer quiets httpx and httpcore (their DEBUG lines carry URLs and headers),
    even in a program that logs everything at DEBUG. Asked of a fresh interpreter: reloading the module
    in this one would replace its classes (OutcomeUnknown, ApiClient, ...) under every module and test
    that already holds them, and break tests that run later."""
    code = (
        "import logging; logging.basicConfig(level=logging.DEBUG)\n"
        "import gpujob.providers.http\n"
        "print(*(logging.getLogger(n).getEffectiveLevel() for n in ('httpx', 'httpcore')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    levels = [int(x) for x in done.stdout.split()]
    assert len(levels) == 2 and all(level >= logging.WARNING for level in levels), done.stdout


def test_3_4_plan_and_fix_files_are_private(project: Path, env: dict[str, str]) -> None:
    old = os.umask(0o022)  # a typical login shell: files would be world-readable by default
    try:
        cli(["plan", "-o", "plan.json"], cwd=project, env=env)
        cli(["audit", "--fix", "-o", "fix.json"], cwd=project, env=env)
    finally:
        os.umask(old)
    for name in ("plan.json", "fix.json"):
        mode = stat.S_IMODE((project / name).stat().st_mode)
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"


def test_3_1_secret_values_never_reach_a_url_or_a_request_body(
    project: Path, env: dict[str, str], rsim: RecordingSim
) -> None:
    run_all(project, env, [["plan"], ["audit"], ["cost"]])
    bodies = [w.body.decode("utf-8", "replace") for w in rsim.api_requests()]
    # The seeding above sent the canary as pod env on purpose; plan/audit/cost must send nothing.
    seeded = sum(1 for w in rsim.api_requests() if w.method == "POST")
    assert not leaks(bodies[seeded:] + [f"{w.path}?{w.query}" for w in rsim.api_requests()], CANARIES)
