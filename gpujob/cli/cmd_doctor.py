"""`gpujob doctor`: check, read-only, that every API read gpujob makes answers in the shape gpujob
expects, for each platform whose API key is set. Exit 0 when all is well, 1 on drift or errors."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime

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
@accepts_no_color
def command(platforms: tuple[str, ...], fmt: str) -> None:
    """Check every API read gpujob makes against your account, read-only (GETs and GraphQL queries
    only): each answer is OK, DRIFT (which field, expected vs got), REFUSED or ERROR. Run it first on a
    new account, and paste its output into bug reports (it never prints the key)."""

    def body() -> int:
        import sys

        from gpujob import __version__
        from gpujob.config import API_KEY_ENV
        from gpujob.doctor import report
        from gpujob.errors import ConfigError

        wanted = list(platforms) or [p for p, env in API_KEY_ENV.items() if os.environ.get(env, "").strip()]
        if not wanted:
            raise ConfigError(
                "no API key is set: doctor checks the platforms whose key is in the environment",
                hint="export RUNPOD_API_KEY=... and/or PAPERSPACE_API_KEY=..., then run gpujob doctor",
            )
        results, bases = asyncio.run(_check(wanted))
        now = datetime.now(UTC)
        render = report.as_json if fmt == "json" else report.text
        sys.stdout.write(render(results, now=now, version=__version__, bases=bases))
        return report.exit_code(results)

    code = run_command(body)
    raise SystemExit(code)


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
