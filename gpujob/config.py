"""Where gpujob talks to (where it keeps its own state is gpujob.state.config). Environment variables
only name things; secret values (API keys) are read at the moment of use and never stored or printed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RUNPOD_API_URL = "https://api.runpod.io/v2"
RUNPOD_GRAPHQL_URL = "https://api.runpod.io/graphql"
PAPERSPACE_API_URL = "https://api.paperspace.com/v1"

API_KEY_ENV = {"runpod": "RUNPOD_API_KEY", "paperspace": "PAPERSPACE_API_KEY"}


@dataclass(frozen=True)
class Endpoints:
    runpod_api: str
    runpod_graphql: str
    paperspace_api: str
    paperspace_ssh_port: int
    paperspace_ssh_user: str


def endpoints(env: dict[str, str] | None = None) -> Endpoints:
    """Base URLs, overridable so the same clients talk to the local simulator."""
    e = os.environ if env is None else env
    return Endpoints(
        runpod_api=e.get("GPUJOB_RUNPOD_API_URL", RUNPOD_API_URL).rstrip("/"),
        runpod_graphql=e.get("GPUJOB_RUNPOD_GRAPHQL_URL", RUNPOD_GRAPHQL_URL),
        paperspace_api=e.get("GPUJOB_PAPERSPACE_API_URL", PAPERSPACE_API_URL).rstrip("/"),
        paperspace_ssh_port=int(e.get("GPUJOB_PAPERSPACE_SSH_PORT", "22")),
        paperspace_ssh_user=e.get("GPUJOB_PAPERSPACE_SSH_USER", "paperspace"),
    )


def api_key(platform: str, env: dict[str, str] | None = None) -> str:
    """The API key for a platform, from its env var. Raises ConfigError naming the variable to set."""
    from gpujob.errors import ConfigError

    e = os.environ if env is None else env
    name = API_KEY_ENV[platform]
    value = e.get(name, "").strip()
    if not value:
        raise ConfigError(
            f"{platform}: no API key: the environment variable {name} is not set",
            hint=f'export {name}=... (or run against the local simulator: eval "$(gpujob sim env)")',
        )
    return value


def sim_dir() -> Path:
    """The simulator's data dir ($GPUJOB_SIM_DIR, else the user state dir)."""
    override = os.environ.get("GPUJOB_SIM_DIR")
    if override:
        return Path(override)
    from platformdirs import user_state_dir

    return Path(user_state_dir("gpujob")) / "sim"
