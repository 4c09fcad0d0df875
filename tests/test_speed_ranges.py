"""A speed a poster gives as a range of what they saw (issue 42, round 12): "No MTP: ~31-32 tok/s" beside "MTP enabled:
~22-27 tok/s" (a KoboldCpp user's summary of its speed lines, LostRuins/koboldcpp issues; llama.cpp threads write "40-42
t/s" the same way) is read at the range's middle, only with a speed's unit; a bare range ("batch 1-4") is no figure, and
a database's transactions per second beside a cache setting compare no drafting run."""

from __future__ import annotations

from pathlib import Path

import pytest
from pastes import read_paste

from mtpinspect.logread.tables.words import _number


@pytest.mark.parametrize("text", [
    "llama-server, Qwen3-8B Q4_K_M, RTX 3060\nwithout MTP: 40-42 t/s\nwith MTP: 33–36 t/s\n",
    "LM Studio 0.4.2, Gemma 4 31B, M3 Max\nMTP off: ~18-19 tok/s\nMTP on: ~14-16 tok/s\n",
])
def test_drafting_slower_by_its_range_reads_as_slower(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    # Drafting faster by its range: no cause.
    "llama-server, Qwen3-8B Q4_K_M, RTX 3060\nwithout MTP: 40-42 t/s\nwith MTP: 50-55 t/s\n",
    # A database benchmark's transactions per second, a cache setting, no drafting.
    "pgbench, scale 100\nbaseline: 1000-1200 tps\nwith query cache: 900-1000 tps\n",
])
def test_no_drafting_run_slower_by_its_range_names_no_cause(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == []


def test_a_range_is_a_speed_only_with_a_speeds_unit() -> None:
    assert _number("~22-27 tok/s") == (24.5, "tok/s")
    assert _number("31–32 t/s") == (31.5, "t/s")
    assert _number("1-4") is None
    assert _number("27-22 tok/s") is None  # not a range
