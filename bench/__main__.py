"""`python -m bench [--quick] [--only SUITE...]`: print figure / floor / ratio / target and write them as
JSON (bench/results.json for a full run; a quick or partial run never overwrites it)."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from bench.harness import Result

SUITES = [
    "startup",
    "live_read",
    "transfer",
    "resume",
    "goodput",
    "failover",
    "memory",
    "log_memory",
    "sweep",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repetitions and small data (smoke run)")
    parser.add_argument("--only", nargs="*", choices=SUITES, help="run only these suites")
    parser.add_argument(
        "--out",
        default=None,
        help="where the figures go (default: bench/results.json for a full run, which is committed; "
        "bench/last-run.json, ignored by git, for --quick or --only)",
    )
    args = parser.parse_args(argv)
    if args.out is None:
        partial = args.quick or args.only
        args.out = str(Path(__file__).with_name("last-run.json" if partial else "results.json"))
    repeat = 2 if args.quick else 7
    results: list[Result] = []
    for name in args.only or SUITES:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            results.append(Result(name, "-", math.nan, error=f"suite not built: {exc.name}"))
            continue
        try:
            results.extend(
                module.run(repeat=repeat, quick=args.quick)
                if "quick" in module.run.__code__.co_varnames
                else module.run(repeat=repeat)
            )
        except Exception as exc:  # a benchmark failure is reported, never hidden
            results.append(Result(name, "-", math.nan, error=f"{type(exc).__name__}: {exc}"))
            traceback.print_exc()
    print(render(results))
    payload = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "cores": os.cpu_count(),
        # what the transfer figures ran over: the cipher gpujob and this machine's OpenSSH agree on
        "cipher": negotiated_cipher() if "transfer" in (args.only or SUITES) else None,
        # a busy machine skews every figure: the load is recorded so a reader can judge a run
        "load_average": os.getloadavg(),
        "quick": args.quick,
        "results": [r.as_dict() for r in results],
    }
    Path(args.out).write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 1 if any(r.error for r in results) else 0


def negotiated_cipher() -> str | None:
    """The cipher of a gpujob connection to a local OpenSSH sshd, both directions ("recv/send")."""
    import asyncio
    import tempfile

    from gpujob.ssh.session import connect
    from gpujob.ssh.testing import local_sshd

    async def ask(endpoint, key: Path, known: Path) -> str:  # type: ignore[no-untyped-def]
        async with connect(endpoint, key_path=key, known_hosts=known, resource_id="bench") as remote:
            recv, send = (remote.conn.get_extra_info(k) for k in ("recv_cipher", "send_cipher"))
            return str(recv) if recv == send else f"{recv}/{send}"

    try:
        with tempfile.TemporaryDirectory() as tmp, local_sshd(Path(tmp) / "sshd") as (endpoint, key):
            return asyncio.run(ask(endpoint, key, Path(tmp) / "known_hosts.json"))
    except Exception as exc:  # the figures stand without it; say why it is missing
        return f"unknown ({type(exc).__name__}: {exc})"


def render(results: list[Result]) -> str:
    rows = [("figure", "median", "floor", "median", "ratio", "target", "met")]
    for r in results:
        if r.error:
            rows.append((r.figure, "-", r.floor_name, "-", "-", "-", f"ERROR {r.error}"))
            continue
        spread = f"{min(r.figure_samples):.3g}–{max(r.figure_samples):.3g}"
        target = f"{'≥' if r.higher_is_better else '≤'}{r.target:g}×"
        rows.append(
            (
                r.figure,
                f"{r.figure_median:.3g}{r.unit} ({spread})",
                r.floor_name,
                f"{r.floor_median:.3g}{r.unit}",
                f"{r.ratio:.2f}×",
                target,
                {True: "yes", False: "NO", None: "?"}[r.met] + (f"  {r.note}" if r.note else ""),
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows)


if __name__ == "__main__":
    sys.exit(main())
