"""The validated-profile cache: a hit is the same profile, any change of content is a miss, and only a
private file is ever unpickled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpujob import profile_cache
from gpujob.profile import Profile, load_profile, profiles_dir


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUJOB_PROFILE_CACHE", str(tmp_path / "cache"))
    load_profile.cache_clear()
    yield tmp_path / "cache"
    load_profile.cache_clear()


def test_second_load_reads_the_cache_and_equals_a_fresh_validation(cache_dir: Path) -> None:
    fresh = load_profile("runpod")
    files = list(cache_dir.glob("runpod-*.pickle"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
    load_profile.cache_clear()
    cached = load_profile("runpod")
    assert cached is not fresh and cached == fresh
    assert (
        cached.tier("volume_disk").price_gb_month_stopped == fresh.tier("volume_disk").price_gb_month_stopped
    )


def test_changed_profile_text_is_a_miss(cache_dir: Path) -> None:
    raw = (profiles_dir() / "paperspace.yaml").read_bytes()
    profile_cache.write("paperspace", raw, "stale object")
    assert profile_cache.read("paperspace", raw) == "stale object"
    assert profile_cache.read("paperspace", raw + b"\n# edited\n") is None


def test_a_file_others_can_write_is_never_unpickled(cache_dir: Path) -> None:
    raw = b"platform: runpod\n"
    profile_cache.write("runpod", raw, {"x": 1})
    (path,) = cache_dir.glob("runpod-*.pickle")
    os.chmod(path, 0o666)
    assert profile_cache.read("runpod", raw) is None


def test_corrupt_cache_file_is_a_miss_and_the_profile_still_loads(cache_dir: Path) -> None:
    load_profile("runpod")
    (path,) = cache_dir.glob("runpod-*.pickle")
    path.write_bytes(b"\x80\x05garbage")
    load_profile.cache_clear()
    assert isinstance(load_profile("runpod"), Profile)


def test_off_switch_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUJOB_PROFILE_CACHE", "off")
    profile_cache.write("runpod", b"x", {"x": 1})
    assert profile_cache.read("runpod", b"x") is None
