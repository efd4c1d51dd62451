"""The dependencies' known import-time warnings, kept from the user's screen.

Only warnings named here, by category, message and the module that raises them, are filtered; any other
warning (a new one from a dependency, or gpujob's own) still shows in development and tests. Each entry
says why it is harmless to gpujob. The filter is installed at the process entry (`gpujob.cli.main.main`),
never in library code that tests import, so the test suite keeps seeing what a dependency says.
"""

from __future__ import annotations

import warnings

# (category's module, category's name, message regex, raising module regex, why it is safe to hide)
KNOWN: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "cryptography.utils",
        "CryptographyDeprecationWarning",
        r"DSA is deprecated",
        r"asyncssh(\..*)?$",
        # cryptography >= 51 warns when DSA's types are merely named; asyncssh names them in its type
        # aliases at import. gpujob generates and pins ed25519 keys only and never offers or accepts DSA.
        "asyncssh's DSA type aliases; gpujob never uses DSA keys",
    ),
)


def quiet_known() -> None:
    """Install one `ignore` filter per known warning (a category that cannot be imported is skipped)."""
    import importlib

    for module, name, message, raiser, _why in KNOWN:
        try:
            category = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        warnings.filterwarnings("ignore", message=message, category=category, module=raiser)
