"""Reading a whole account (every billable object, not only gpujob's) and the local jobs that own some."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpujob.audit.fix import FixJob
from gpujob.config import API_KEY_ENV
from gpujob.errors import ConfigError, GpujobError
from gpujob.live import LiveResource, LiveState
from gpujob.model import PLATFORMS, Platform
from gpujob.plan.costs import read_error_text


def configured_platforms(env: Mapping[str, str] | None = None) -> list[Platform]:
    """Platforms whose API key variable is set."""
    e = os.environ if env is None else env
    return [p for p in PLATFORMS if e.get(API_KEY_ENV[p], "").strip()]


def choose_platforms(requested: Iterable[str], env: Mapping[str, str] | None = None) -> list[Platform]:
    wanted = [p for p in PLATFORMS if p in set(requested)]
    if wanted:
        return wanted
    found = configured_platforms(env)
    if not found:
        names = " or ".join(API_KEY_ENV.values())
        raise ConfigError(
            f"no platform configured: neither {names} is set",
            hint='set an API key, or rehearse against the simulator: eval "$(gpujob sim env)"',
        )
    return found


def local_jobs(paths: Iterable[Path], root: Path | None = None) -> list[FixJob]:
    """This repo's jobs: the given job files, else the ones discovered in `root` (default cwd).
    Raises SpecError when a file is invalid: ownership must not be guessed from a broken file."""
    from gpujob.project import with_projects
    from gpujob.spec.load import discover_job_files, load_specs

    files = list(paths) or discover_job_files(root or Path.cwd())
    return fix_jobs(with_projects(load_specs(files), create=False))


def fix_jobs(loaded: Iterable[Any]) -> list[FixJob]:
    """FixJob of each loaded job file (with its project id)."""
    out: list[FixJob] = []
    for loaded_spec in loaded:
        spec = loaded_spec.spec
        out.append(
            FixJob(
                name=spec.name,
                platform=spec.platform,
                spec_file=str(loaded_spec.path),
                desired_state=spec.state,
                has_checkpoint=spec.checkpoint is not None,
                digest=loaded_spec.digest,
                project=loaded_spec.project,
            )
        )
    return out


async def _everything(provider: Any) -> list[LiveResource]:
    """What the audit reads: a provider's audit_resources() where it has more billing kinds than a plan
    needs (RunPod clusters, serverless endpoints), else list_resources()."""
    more = getattr(provider, "audit_resources", None)
    return await (more() if callable(more) else provider.list_resources())  # type: ignore[no-any-return]


async def read_account(platforms: list[Platform], env: Mapping[str, str] | None = None) -> LiveState:
    """One list_resources per platform, concurrently. A platform that fails becomes a read error, so
    the other platform's report still prints (and the command exits 1)."""
    from gpujob.providers.registry import open_providers

    read_at = datetime.now(UTC)
    resources: list[LiveResource] = []
    errors: list[str] = []
    async with open_providers(set(platforms), env=dict(env) if env is not None else None) as providers:
        names = [p for p in platforms if p in providers]
        results = await asyncio.gather(*(_everything(providers[p]) for p in names), return_exceptions=True)
        for platform, result in zip(names, results, strict=True):
            if isinstance(result, GpujobError):
                errors.append(read_error_text(platform, result))
            elif isinstance(result, BaseException):
                raise result
            else:
                resources.extend(result)
    return LiveState(read_at=read_at, resources=resources, read_errors=errors)
