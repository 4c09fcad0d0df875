"""What `diagnose` must say of a trunk beside a head trained with another trunk, for either built-in model:
one function, so the glm4moe and qwen35 tests assert the same reading."""

from __future__ import annotations

import json
from pathlib import Path

from cliproc import run_cli


def assert_foreign_head(trunk: Path, sidecar: Path) -> None:
    """The pair loads and drafts, and the trunk rejects about every draft: check finds the sidecar's embedding rows
    another trunk's (SIDECAR_FOREIGN), so diagnose names a foreign head, with the copy class's figure."""
    done = run_cli("diagnose", str(trunk), "--mtp-file", str(sidecar), "--format", "json", "--n-predict", "48",
                   "--", "-t", "2", timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    first = report["causes"][0]
    assert first["code"] == "HEAD_FOREIGN", report["causes"]
    assert any(line.startswith("check SIDECAR_FOREIGN:") and "unrelated vectors" in line for line in first["evidence"])
    assert any(line.startswith("probe n-max 1 copy: acceptance") for line in first["evidence"])
    drafted = {(r["prompt_class"], r["n_max"]): r["drafted"] for r in report["probe"]["results"] if r["n_max"]}
    assert drafted and all(n > 0 for n in drafted.values()), drafted
