"""Provider factory: `async with open_providers({"runpod"}) as providers:` owns the HTTP clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from gpujob.clock import Clock, SystemClock
from gpujob.config import API_KEY_ENV, api_key, endpoints
from gpujob.errors import ConfigError
from gpujob.providers.base import Provider
from gpujob.providers.http import DEFAULT_TIMEOUT, ApiClient, RetryPolicy
from gpujob.providers.wait import Timeouts


def provider_for(
    platform: str,
    http: httpx.AsyncClient,
    *,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    **client_kw: Any,
) -> Provider:
    """Build one platform's provider on an existing httpx client (the caller owns and closes it)."""
    clock = clock or SystemClock()
    e = dict(env) if env is not None else None
    ends = endpoints(e)
    if platform not in API_KEY_ENV:
        raise ConfigError(f"unknown platform '{platform}'", hint="use runpod or paperspace")
    key = api_key(platform, e)
    common: dict[str, Any] = {"http": http, "api_key": key, "key_env": API_KEY_ENV[platform], "clock": clock}
    common.update(policy=policy, **client_kw)
    if platform == "runpod":
        from gpujob.providers.runpod.client import RunPodClient, parse_error
        from gpujob.providers.runpod.provider import RunPodProvider

        rest = ApiClient(platform="runpod", base_url=ends.runpod_api, parse_error=parse_error, **common)
        gql = ApiClient(platform="runpod", base_url=ends.runpod_graphql, parse_error=parse_error, **common)
        return RunPodProvider(RunPodClient(rest, gql), clock=clock, timeouts=timeouts)
    from gpujob.providers.paperspace.client import PaperspaceClient
    from gpujob.providers.paperspace.client import parse_error as ps_parse_error
    from gpujob.providers.paperspace.provider import PaperspaceProvider

    api = ApiClient(platform="paperspace", base_url=ends.paperspace_api, parse_error=ps_parse_error, **common)
    return PaperspaceProvider(
        PaperspaceClient(api),
        clock=clock,
        ssh_port=ends.paperspace_ssh_port,
        ssh_user=ends.paperspace_ssh_user,
        timeouts=timeouts,
    )


@asynccontextmanager
async def open_providers(
    platforms: Iterable[str],
    *,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
) -> AsyncIterator[dict[str, Provider]]:
    """One httpx.AsyncClient per platform, closed on exit. API keys are read here (ConfigError naming
    the variable when one is missing), before any request is made."""
    wanted = sorted(set(platforms))
    clients: list[httpx.AsyncClient] = []
    try:
        providers: dict[str, Provider] = {}
        for platform in wanted:
            http = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=False)
            clients.append(http)
            providers[platform] = provider_for(
                platform, http, clock=clock, env=env, policy=policy, timeouts=timeouts
            )
        yield providers
    finally:
        for http in clients:
            await http.aclose()
