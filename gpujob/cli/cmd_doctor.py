"""`gpujob doctor`: check, read-only, the team setup (state store, state key, API URLs, local tools:
gpujob.doctor.setup), then that every API read gpujob makes answers in the shape gpujob expects, for
each platform whose API key is set. Exit 0 when all is well, 1 on a failed setup line, drift or errors."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import accepts_no_color


@click.command()
@click.option(
    "--platform",
    "platforms",
    type=click.Choice(["runpod", "paperspace"]),
    multiple=True,
    help="Check only this platform (repeatable). Default: every platform whose API key is set.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-api", is_flag=True, help="Check only the setup (state store, state key, URLs, tools).")
@click.option("-f", "--file", "job_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A job file of the project (its state store is checked; default: the current directory's).")  # fmt: skip
@accepts_no_color
def command(platforms: tuple[str, ...], fmt: str, no_api: bool, job_file: Path | None) -> None:
    """Check the team setup, then every API read gpujob makes against your account, all read-only.

    \b
    Setup: which state store this project uses (local directory or PostgreSQL) and that it answers,
    that GPUJOB_STATE_KEY decrypts what is sealed there (no table is made, nothing written), whether the
    API URLs point at a simulator, and the local tools (ssh; sshd, tmux, rsync for the tests). Each line
    is OK, WARN or FAIL with a fix; a FAIL exits 1.

    \b
    APIs (GETs and GraphQL queries only): each answer is OK, DRIFT (which field, expected vs got),
    REFUSED or ERROR. Run it first on a new account or machine, and paste its output into bug reports
    (it never prints a key or a password).

    \b
    Examples:
      gpujob doctor
      gpujob doctor --no-api -f jobs/bert.yaml      the state store and key of that job's project
    """

    def body() -> int:
        import json
        import sys

        from gpujob import __version__
        from gpujob.config import API_KEY_ENV
        from gpujob.doctor import report, setup
        from gpujob.errors import ConfigError

        lines = setup.check_setup(job_file or _one_job_file())
        code = setup.exit_code(lines)
        if fmt == "text":
            sys.stdout.write(setup.text(lines))
        if no_api:
            if fmt == "json":
                doc = {"setup": setup.as_json(lines), "exit_code": code}
                sys.stdout.write(json.dumps(doc, indent=2) + "\n")
            return code
        wanted = list(platforms) or [p for p, env in API_KEY_ENV.items() if os.environ.get(env, "").strip()]
        if not wanted:
            raise ConfigError(
                "no API key is set: doctor checks the platforms whose key is in the environment",
                hint="export RUNPOD_API_KEY=... and/or PAPERSPACE_API_KEY=..., then run gpujob doctor "
                "(or gpujob doctor --no-api for the setup alone)",
            )
        results, bases = asyncio.run(_check(wanted))
        now = datetime.now(UTC)
        code = max(code, report.exit_code(results))
        from gpujob.doctor.autopay import autopay_line

        money = [line for line in [autopay_line(results)] if line is not None]
        if fmt == "json":
            doc = json.loads(report.as_json(results, now=now, version=__version__, bases=bases))
            doc["setup"] = setup.as_json(lines + money)
            doc["exit_code"] = code
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            sys.stdout.write("\n" + report.text(results, now=now, version=__version__, bases=bases))
            if money:
                sys.stdout.write("\n" + setup.text(money, title="Money (what no API reports):"))
        return code

    code = run_command(body)
    raise SystemExit(code)


def _one_job_file() -> Path | None:
    """The job file here when there is exactly one (its project's store); else the current directory."""
    from gpujob.spec.load import discover_job_files

    found = discover_job_files(Path.cwd())
    return found[0] if len(found) == 1 else None


async def _check(platforms: list[str]) -> tuple[list, dict[str, str]]:  # type: ignore[type-arg]
    import httpx

    from gpujob.clock import SystemClock
    from gpujob.config import API_KEY_ENV, api_key, endpoints
    from gpujob.doctor.checks import checks, run_checks
    from gpujob.providers.http import DEFAULT_TIMEOUT, ApiClient, RetryPolicy

    ends = endpoints()
    bases = {"runpod": ends.runpod_api, "paperspace": ends.paperspace_api}
    policy = RetryPolicy(attempts=3, deadline=60.0)  # a check, not an apply: fail soon and say so
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=False) as http:
        apis: dict[str, ApiClient] = {}
        graphql = None
        for p in platforms:
            from gpujob.providers.paperspace.client import parse_error as ps_errors
            from gpujob.providers.runpod.client import parse_error as rp_errors

            common = {
                "http": http, "api_key": api_key(p), "key_env": API_KEY_ENV[p], "clock": SystemClock(),
                "policy": policy, "parse_error": rp_errors if p == "runpod" else ps_errors,
            }  # fmt: skip
            apis[p] = ApiClient(platform=p, base_url=bases[p], **common)  # type: ignore[arg-type]
            if p == "runpod":
                graphql = ApiClient(platform=p, base_url=ends.runpod_graphql, **common)  # type: ignore[arg-type]
        return await run_checks(apis, graphql, checks()), {p: bases[p] for p in platforms}
