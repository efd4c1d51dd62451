"""Secrets at rest in a shared store: AES-256-GCM (the `cryptography` library) under a key derived from
$GPUJOB_STATE_KEY with scrypt and the store's salt.

Each sealed value is nonce (12 bytes) + ciphertext + tag, and is bound to its place (workspace and
name) as associated data, so a row copied onto another name does not decrypt. The key itself is read
at the moment of use, registered with gpujob.redact so no message can show it, and never stored.
"""

from __future__ import annotations

import os
from functools import lru_cache

KEY_ENV = "GPUJOB_STATE_KEY"
MIN_KEY_CHARS = 16
NONCE_BYTES = 12
# scrypt cost: ~0.1-0.2 s once per process; worth it when the key is a passphrase someone typed.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


def state_key(location: str, why: str) -> str:
    """$GPUJOB_STATE_KEY, or StateKeyError saying what it is needed for."""
    from gpujob.errors import StateKeyError
    from gpujob.redact import register

    value = os.environ.get(KEY_ENV, "")
    if not value.strip():
        raise StateKeyError(
            f"{why}: {location} keeps it encrypted, and {KEY_ENV} is not set",
            hint=f"set {KEY_ENV} to the team's state key (people who only plan do not need it)",
        )
    if len(value.strip()) < MIN_KEY_CHARS:
        raise StateKeyError(
            f"{KEY_ENV} is too short to protect anything (fewer than {MIN_KEY_CHARS} characters)",
            hint="make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )
    register(value.strip())
    return value.strip()


@lru_cache(maxsize=4)
def _derive(passphrase: str, salt: bytes) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P).derive(passphrase.encode())


def _aad(workspace: str, name: str) -> bytes:
    return f"gpujob-state\0{workspace}\0{name}".encode()


def seal(passphrase: str, salt: bytes, workspace: str, name: str, plaintext: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(_derive(passphrase, salt)).encrypt(nonce, plaintext, _aad(workspace, name))


def unseal(passphrase: str, salt: bytes, workspace: str, name: str, sealed: bytes, location: str) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from gpujob.errors import StateKeyError

    nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
    try:
        return AESGCM(_derive(passphrase, salt)).decrypt(nonce, body, _aad(workspace, name))
    except InvalidTag:
        raise StateKeyError(
            f"cannot decrypt {name} in {location}: {KEY_ENV} is not the key it was stored with "
            "(or the row was altered)",
            hint=f"use the team's {KEY_ENV}; a lost key means making a new project SSH key",
        ) from None
