"""The scan builds the data in the same pass that checks it; ruamel's own safe loader is the oracle.

Whatever YAML the scan accepts must come out exactly as `YAML(typ="safe").load` makes it (after the
same `_plain` step), so the single-pass reader changes speed, never meaning."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpujob.spec.scan import scan_events
from gpujob.spec.yamlsafe import _plain, parse_file
from tests.examples import examples

ROOT = Path(__file__).resolve().parents[2]


def _oracle(text: str) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yaml = YAML(typ="safe")
        yaml.allow_duplicate_keys = True  # the scan reports duplicates itself; the later value stands
        return _plain(yaml.load(io.StringIO(text)))


def _check(text: str) -> None:
    scan = scan_events(text, "job.yaml")
    if scan.fatal or not scan.built:
        return  # refused (or only checked by the slow parser): nothing is built, nothing to compare
    try:
        expected = _oracle(text)
    except Exception:
        # the oracle refuses what the scan built: only acceptable when the scan reported it too
        pytest.fail(f"scan built data the safe loader refuses:\n{text}")
    assert _plain(scan.data) == expected, text


CASES = [
    "a: 1\nb: [yes, no, true, False, ~, null, '', 0o17, 017, 0x1f, 0b11, 1_000, +1, -.5, .inf, -.Inf, .nan2]\n",
    "d: 2024-01-02\nt: 2024-01-02 10:00:00\nu: 1:20\nq: '5'\nr: !!str 5\ns: !!int '7'\nf: !!float 1\n",
    "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n",
    "a: &a {k: 1}\nb: &b {k: 2, m: 3}\nc:\n  <<: [*a, *b]\n  z: 0\n",
    "c:\n  z: 0\n  <<: {z: 9, w: 1}\n",
    "s: &s hello\nt: *s\nl: &l [1, 2]\nm: [*l, *l]\n",
    "? [a, b]\n: 1\n",
    "dup: 1\ndup: 2\n",
    "1: one\ntrue: yes\nnull: x\n",
    "block: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "nested: {a: [1, {b: [2, 3]}], c: {}}\nempty: []\n",
    "---\nonly: doc\n...\n",
]


@pytest.mark.parametrize("text", CASES)
def test_known_shapes(text: str) -> None:
    _check(text)


def _utf8(path: Path) -> bool:
    try:
        path.read_text()
    except UnicodeDecodeError:  # refused before any parse (tests/spec/test_spec_broken_examples.py)
        return False
    return True


@pytest.mark.parametrize(
    "path", [p for p in sorted(ROOT.glob("examples/**/*.yaml")) if _utf8(p)], ids=lambda p: p.name
)
def test_every_example_file(path: Path) -> None:
    _check(path.read_text())


def test_merge_keys_are_left_to_ruamel_and_still_read(tmp_path: Path) -> None:
    text = "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n"
    assert not scan_events(text, "job.yaml").built
    (tmp_path / "job.yaml").write_text(text)
    parsed = parse_file(tmp_path / "job.yaml", "job.yaml")
    assert parsed.data == {"base": {"x": 1, "y": 2}, "other": {"x": 1, "y": 3}}


def test_bad_merge_and_unhashable_key_are_problems_not_tracebacks(tmp_path: Path) -> None:
    for text in ("a:\n  <<: 5\n", "? {a: 1}\n: 2\n"):
        (tmp_path / "job.yaml").write_text(text)
        parsed = parse_file(tmp_path / "job.yaml", "job.yaml")
        assert parsed.data is None and parsed.problems[0].message.startswith("cannot read YAML"), text


SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("ab:- \n[]{}&*!|>'\",#?1.~<0xo+eE")), max_size=120))
def test_yamlish_text_matches_the_safe_loader(text: str) -> None:
    _check(text)


def test_scalar_memo_changes_no_meaning() -> None:
    # Scalars resolved once are reused across files (and documents of another YAML version): every
    # file scanned with a warm memo still comes out as the safe loader makes it.
    texts = [*CASES, "%YAML 1.1\n---\na: yes\nb: 017\nc: 1:20\n", "a: yes\nb: 017\nc: 1:20\n"]
    for _ in range(2):
        for text in texts:
            _check(text)
    first = scan_events("l: [1, 2]\nm: x\n", "a.yaml").data
    first["l"].append(3)  # containers are built afresh for each file; only immutable scalars are shared
    assert scan_events("l: [1, 2]\nm: x\n", "b.yaml").data == {"l": [1, 2], "m": "x"}
