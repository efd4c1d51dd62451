"""The month's spend the project budget (budget.max_monthly_usd) is held against, read for `gpujob budget`,
`plan` and `apply`: watch's ledgers and the cost engine's figure of every job read (gpujob.cost.monthly),
so a job never watched counts what the platforms bill for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.cost.monthly import Billed, Monthly, billed_of, project_monthly, read_cap


def capped(loaded: Sequence[Any]) -> bool:
    """Whether the project has a monthly budget (only then does a plan read the costs for it)."""
    return bool(loaded) and read_cap(Path(loaded[0].path).resolve().parent)[0] is not None


async def read_billed(loaded: Sequence[Any], providers: Mapping[str, Any]) -> dict[str, Billed]:
    """The cost engine's figure of each job, on every platform it may be on, as `gpujob cost` reads it
    (one listing and one metering call per platform, concurrently); nothing is recorded."""
    from gpujob.failover.money import read_costs_anywhere

    return billed_of(await read_costs_anywhere(loaded, providers, record=False))


def read_billed_aside(loaded: Sequence[Any]) -> Future[dict[str, Billed]]:
    """read_billed in a thread of its own, with its own providers, alongside the plan's live read."""
    import asyncio

    from gpujob.failover.entries import platforms_read
    from gpujob.providers.registry import open_providers

    async def go() -> dict[str, Billed]:
        async with open_providers(platforms_read(loaded)) as providers:
            return await read_billed(loaded, providers)

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(asyncio.run, go())
    pool.shutdown(wait=False)  # the future is awaited by month_of_project, after the live read
    return future


def month_of_project(
    loaded: Sequence[Any], now: datetime, billed: Future[dict[str, Billed]] | dict[str, Billed] | None
) -> Monthly:
    got = billed.result() if isinstance(billed, Future) else billed
    return project_monthly(loaded, now, got)
