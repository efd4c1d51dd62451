"""The providers' respx router and fake clock (tests/providers/conftest.py), for `gpujob state` over HTTP."""

from tests.providers.conftest import anyio_backend, clock, router  # noqa: F401  (fixtures)
