"""The walk's compiled Matcher decides exactly as `ignored` (git's last-match-wins) does."""

from __future__ import annotations

import itertools

from gpujob.ssh.ignore import DENY, Matcher, ignored, parse


def test_the_compiled_matcher_agrees_with_last_match_wins_on_every_path() -> None:
    rules = (
        parse(["*.log", "!keep.log", "build/", "/top.txt", "docs/**/*.tmp", "!docs/keep.tmp", "cache/"])
        + parse(["*.csv", "!b.csv", "out/"], "data")
        + parse(["!*.log", "x?.py"], "data/sub")
        + parse(["*.ckpt", "!best.ckpt"])
        + parse(list(DENY))
    )
    names = [
        "keep.log",
        "a.log",
        "b.csv",
        "a.csv",
        "top.txt",
        "x1.py",
        "best.ckpt",
        "m.ckpt",
        "build",
        "cache",
        "out",
        ".env",
        "id_rsa",
        "keep.tmp",
        "z.tmp",
        ".git",
        "credentials.json",
        "ok.py",
    ]
    dirs = ["", "data", "data/sub", "docs", "docs/a", "sub", ".aws", "data/sub/deep"]
    checked = 0
    for d, name, is_dir in itertools.product(dirs, names, (False, True)):
        rel = f"{d}/{name}" if d else name
        assert Matcher(rules)(rel, is_dir) == ignored(rules, rel, is_dir), (rel, is_dir)
        checked += 1
    assert checked == len(dirs) * len(names) * 2
    # Both verdicts occur, with negations deciding some of them.
    m = Matcher(rules)
    assert m("a.log", False) and not m("keep.log", False) and not m("data/sub/a.log", False)
    assert m("data/a.csv", False) and not m("data/b.csv", False) and m(".env", False)
