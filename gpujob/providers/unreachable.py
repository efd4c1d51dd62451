"""Why a platform API could not be reached, when retrying cannot help: a TLS certificate gpujob cannot
trust, or the simulator's local address with nothing listening on it."""

from __future__ import annotations

import ipaddress
import os
import re
import ssl

import httpx

from gpujob.errors import ProviderError
from gpujob.providers.notice import API_NAMES

# The variables `gpujob sim env` sets to point gpujob at the simulator (gpujob/config.py reads them).
SIM_URL_VARS = ("GPUJOB_RUNPOD_API_URL", "GPUJOB_RUNPOD_GRAPHQL_URL", "GPUJOB_PAPERSPACE_API_URL")


def refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "Connection refused" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def loopback(url: str) -> bool:
    try:
        host = httpx.URL(url).host
    except (httpx.InvalidURL, TypeError):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_failure(exc: BaseException) -> str | None:
    """The certificate problem behind a connect error, if that is what it is (retrying cannot help)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        text = str(seen)
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
            detail = getattr(seen, "verify_message", None) or text.partition("certificate verify failed:")[2]
            return re.sub(r"\s*\(_ssl\.c:\d+\)", "", detail).strip() or "certificate rejected"
        seen = seen.__cause__ or seen.__context__
    return None


def nothing_listens(platform: str, base_url: str, call: str) -> ProviderError:
    """A platform API on this machine refused the connection: the simulator's address (no platform
    is ever local) with the simulator not running."""
    address = httpx.URL(base_url)
    local = sorted(name for name in SIM_URL_VARS if loopback(os.environ.get(name, "")))
    clear = f"`unset {' '.join(local)}`" if local else "unset the GPUJOB_*_URL variables"
    return ProviderError(
        f"nothing is listening on {address.host}:{address.port}: the simulator is not running",
        platform=platform,
        call=call,
        hint=f"start it: `gpujob sim up`; or, to use the real {API_NAMES.get(platform, platform)} "
        f"API, clear the simulator's environment: {clear}",
    )
