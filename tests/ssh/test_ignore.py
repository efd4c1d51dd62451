from __future__ import annotations

from pathlib import Path

from gpujob.ssh.ignore import ignored, parse, walk


def test_gitignore_semantics() -> None:
    rules = parse(
        ["*.log", "!keep.log", "/top-only.txt", "build/", "docs/**/*.tmp", "a/**", "\\#hash", "data?.csv"]
    )
    cases = {
        ("x.log", False): True,
        ("deep/x.log", False): True,
        ("keep.log", False): False,
        ("top-only.txt", False): True,
        ("sub/top-only.txt", False): False,
        ("build", True): True,
        ("build", False): False,  # a file named build is not the build/ directory
        ("sub/build", True): True,
        ("docs/x.tmp", False): True,
        ("docs/a/b/x.tmp", False): True,
        ("other/x.tmp", False): False,
        ("a/anything/here", False): True,
        ("a", True): False,
        ("#hash", False): True,
        ("data1.csv", False): True,
        ("data12.csv", False): False,
    }
    for (path, is_dir), want in cases.items():
        assert ignored(rules, path, is_dir) is want, (path, is_dir)


def test_nested_gitignore_is_relative_to_its_directory(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "inner").mkdir(parents=True)
    (tmp_path / "pkg" / ".gitignore").write_text("/local.txt\n*.bin\n")
    for rel in ("local.txt", "pkg/local.txt", "pkg/inner/local.txt", "pkg/x.bin", "pkg/inner/y.bin", "z.bin"):
        (tmp_path / rel).write_text("x")
    got = {e.rel for e in walk(tmp_path, [])}
    assert got == {"local.txt", "pkg/.gitignore", "pkg/inner/local.txt", "z.bin"}


def test_excluded_directory_cannot_be_reincluded(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    (tmp_path / "main.py").write_text("x")
    assert {e.rel for e in walk(tmp_path, ["out/", "!out/keep.txt"])} == {"main.py"}
