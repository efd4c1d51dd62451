"""Connection strings for the state database, parsed by libpq's own rules (psycopg's conninfo parser)
rather than pattern-matched, so every field that can carry a password is found in every form libpq
accepts: `postgresql://u:pw@h/db`, `postgresql://u@h/db?password=pw`, `host=h password='p w'`, and the
PGPASSWORD-style environment variables.

`shown(dsn)` is the only form gpujob prints: each password-bearing value is written `***`, wherever and
however it is spelt (URL-encoded too). A string libpq cannot parse is not shown at all, since nothing
says where its password is. `secrets(dsn)` are the values to register with gpujob.redact, so an error
text quoting the DSN (the database's own, too) is masked as well.
"""

from __future__ import annotations

import os
from urllib.parse import quote, quote_plus, urlsplit

# libpq keywords whose value is a secret; the rest (host, user, sslkey's path, ...) are shown.
SECRET_KEYS = ("password", "sslpassword")
SECRET_ENV = ("PGPASSWORD", "PGSSLPASSWORD")
MASK = "***"
UNPARSEABLE = "(a connection string libpq cannot parse; not shown)"


def parse(dsn: str) -> dict[str, str]:
    """libpq's reading of the DSN; ValueError (with no part of the DSN in it) when it has none."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except ProgrammingError:
        raise ValueError("not a connection string libpq can parse") from None


def is_url(dsn: str) -> bool:
    return urlsplit(dsn.strip()).scheme in ("postgresql", "postgres")


def secrets(dsn: str, env: dict[str, str] | None = None) -> list[str]:
    """Every password-bearing value in the DSN and in the PGPASSWORD-style environment."""
    e = os.environ if env is None else env
    found = [e[k] for k in SECRET_ENV if e.get(k)]
    try:
        fields = parse(dsn)
    except ValueError:
        return found
    return found + [fields[k] for k in SECRET_KEYS if fields.get(k)]


def has_password(dsn: str) -> bool:
    try:
        return any(parse(dsn).get(k) for k in SECRET_KEYS)
    except ValueError:
        return False


def shown(dsn: str, env: dict[str, str] | None = None) -> str:
    """The DSN as gpujob prints it: every password-bearing value masked (see the module doc)."""
    from urllib.parse import parse_qsl, urlencode, urlunsplit

    from psycopg.conninfo import make_conninfo

    try:
        fields = parse(dsn)
    except ValueError:
        p = urlsplit(dsn.strip())
        if p.scheme and p.hostname:  # another kind of URL: its scheme, host and path say enough
            return f"{p.scheme}://{p.hostname}{p.path}"
        return UNPARSEABLE
    text = dsn.strip()
    if is_url(text):
        p = urlsplit(text)
        netloc = p.netloc.rpartition("@")[2]
        if p.username is not None:
            netloc = f"{p.username}@{netloc}"  # user:pw@ -> user@
        query = [(k, MASK if k in SECRET_KEYS else v) for k, v in parse_qsl(p.query, keep_blank_values=True)]
        text = urlunsplit((p.scheme, netloc, p.path, urlencode(query, safe="*"), p.fragment))
    else:  # key=value, rebuilt from libpq's reading (a quoted value with \' escapes is one value)
        text = make_conninfo(**{k: MASK if k in SECRET_KEYS else v for k, v in fields.items()})
    for value in sorted(set(secrets(dsn, env)), key=len, reverse=True):  # also where libpq did not look
        for form in {value, quote(value, safe=""), quote_plus(value), quote(value)}:
            text = text.replace(form, MASK)
    return text


def safe_url(url: str) -> str:
    """The DSN with every password-bearing field masked (for messages and `location`)."""
    return shown(url)
