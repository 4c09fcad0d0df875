"""A sweep as mtp-bench's --out JSON, one file per configuration (sweep --mtp-bench DIR).

Scripts and posted tables read mtp-bench's ``{"results": [...], "aggregate": {...}}`` (formats/mtp_bench.py
holds its keys). Each measured run becomes one result, named by its prompt id (the nine-category set's ids
are mtp-bench's category names); a failed run is a result with its ``error``, as mtp-bench writes a failed
request. The sweep sends one request at a time, so ``concurrency`` is 1 and ``batch_wall_s`` is the sum of
the requests' wall times (the time between them is spent on /metrics scrapes and server starts, which an
mtp-bench run against an already running server does not have).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mtpinspect.errors import OutputError
from mtpinspect.files import OWN_NAME_HINT, writable, write_file
from mtpinspect.formats.mtp_bench import BenchResult, BenchRun, aggregate_of, to_json
from mtpinspect.sweep.plan import Configuration
from mtpinspect.sweep.records import RunRecord
from mtpinspect.vocabulary import RunStatus

SEQUENTIAL = 1  # the sweep's requests never overlap


def bench_runs(runs: Sequence[RunRecord], configs: Sequence[Configuration]) -> dict[str, BenchRun]:
    """Configuration id -> its runs as mtp-bench results (round by round, prompts in order)."""
    out: dict[str, BenchRun] = {}
    for config in configs:
        mine = sorted((r for r in runs if r.configuration == config.id), key=lambda r: r.repeat)
        if not mine:
            continue
        results = [_result(r) for r in mine]
        wall = sum(r.wall_s or 0.0 for r in results)
        out[config.id] = BenchRun(results, aggregate_of(results, SEQUENTIAL, wall), "json")
    return out


def check_bench_folder(folder: Path, configs: Sequence[Configuration]) -> None:
    """OutputError, before any run, for a --mtp-bench-json folder the files could not be written to: under a
    file, a file itself, or holding a symbolic link (or a folder) where a configuration's file goes."""
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"--mtp-bench-json {folder}: {parent} is a file, not a folder")
            break
    for config in configs:
        writable(folder / f"{config.id}.json", link_hint=OWN_NAME_HINT)


def write_bench_files(runs: Sequence[RunRecord], configs: Sequence[Configuration], folder: Path) -> list[str]:
    """One ``<configuration>.json`` per configuration with runs in ``folder``; the paths written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot make the folder for the mtp-bench files ({exc.strerror or exc})") from None
    written = []
    for config_id, run in bench_runs(runs, configs).items():
        text = json.dumps(to_json(run), indent=2) + "\n"
        path = folder / f"{config_id}.json"
        write_file(path, lambda target, text=text: target.write_text(text, encoding="utf-8"), link_hint=OWN_NAME_HINT)
        written.append(str(path))
    return written


def _result(run: RunRecord) -> BenchResult:
    if run.status != RunStatus.ok:
        return BenchResult(run.prompt_id, 0, 0, 0, 0.0, wall_s=run.wall_seconds, error=run.error or str(run.status))
    return BenchResult(
        name=run.prompt_id, predicted_n=run.predicted_n or 0, draft_n=run.drafted, draft_n_accepted=run.accepted,
        predicted_per_second=run.decode_tokens_per_second or 0.0, wall_s=run.wall_seconds,
    )
