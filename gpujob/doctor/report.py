"""The doctor's report: one line per call (OK / DRIFT / REFUSED / ERROR), the drifted fields under it,
and a header with gpujob's version, the date, and the API versions gpujob was built against. Meant to
be pasted into bug reports as is: it never holds the API key (and is scrubbed of it regardless)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpujob.doctor.checks import API_VERSIONS, RETIRED_MEANS, Result

LABEL = {"ok": "OK", "drift": "DRIFT", "refused": "REFUSED", "error": "ERROR", "retired": "RETIRED"}
NAMES = {"runpod": "RunPod", "paperspace": "Paperspace"}


def exit_code(results: list[Result]) -> int:
    """1 on any drift or error, or when a platform refused every call (its key works for nothing)."""
    if any(r.outcome in ("drift", "error") for r in results):
        return 1
    by_platform: dict[str, list[Result]] = {}
    for r in results:
        by_platform.setdefault(r.platform, []).append(r)
    return int(any(all(r.outcome == "refused" for r in rs) for rs in by_platform.values()))


def text(results: list[Result], *, now: datetime, version: str, bases: Mapping[str, str]) -> str:
    from gpujob.redact import redact
    from gpujob.safe import for_terminal as T  # error text and fields come from the API

    lines = [f"gpujob doctor {version} · {now:%Y-%m-%d %H:%M} UTC · read-only (GET and GraphQL queries only)"]
    for platform in dict.fromkeys(r.platform for r in results):
        lines += ["", f"{NAMES[platform]}: {API_VERSIONS[platform]}", f"  base URL {T(bases[platform])}"]
        rows = [r for r in results if r.platform == platform]
        width = max(len(r.call) for r in rows)
        for r in rows:
            lines.append(f"  {LABEL[r.outcome]:<8} {T(r.call):<{width}}  {T(r.detail)}".rstrip())
            lines += [f"           {T(d)}" for d in r.drifts]
    counts = {k: sum(1 for r in results if r.outcome == k) for k in LABEL}
    lines += [
        "",
        "Summary: " + ", ".join(f"{n} {LABEL[k].lower()}" for k, n in counts.items() if n),
        "Paste this whole report into bug reports: it holds no API key.",
    ]
    if counts["retired"]:
        lines.append(f"RETIRED: {RETIRED_MEANS}")
    if counts["drift"]:
        lines.append(
            "DRIFT: an answer no longer has the shape gpujob reads; please report it with this output "
            "(gpujob may misread that call until it is fixed)."
        )
    return redact("\n".join(lines) + "\n")


def as_json(results: list[Result], *, now: datetime, version: str, bases: Mapping[str, str]) -> str:
    from gpujob.redact import redact

    doc: dict[str, Any] = {
        "gpujob_version": version,
        "checked_at": now.isoformat(),
        "apis": {
            p: {"version": API_VERSIONS[p], "base_url": bases[p]}
            for p in dict.fromkeys(r.platform for r in results)
        },
        "results": [
            {
                "platform": r.platform,
                "call": r.call,
                "outcome": r.outcome,
                "detail": r.detail,
                "count": r.count,
                "drifts": [{"field": d.path, "expected": d.expected, "got": d.got} for d in r.drifts],
            }
            for r in results
        ],
        "exit_code": exit_code(results),
    }
    if any(r.outcome == "retired" for r in results):
        doc["retired"] = RETIRED_MEANS
    return redact(json.dumps(doc, indent=2) + "\n")
