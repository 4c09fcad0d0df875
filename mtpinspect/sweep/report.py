"""The sweep report: the typed result of a sweep and its JSON document (rendering: mtpinspect/cli/sweep.py).

The JSON document follows ``mtpinspect/schemas/sweep.schema.json``. People get a summary table (one
row per configuration and prompt class), the per-position acceptance next to what a constant
per-token acceptance would give, the determinism check, the synthetic cost curve when one was
measured, every failure with its one-line reason, and the recommendation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtpinspect.jsonable import to_jsonable
from mtpinspect.sweep.statistics import DETERMINISM_NOTE, BreakEven, GroupStats, Recommendation

SCHEMA_ID = "https://mtpinspect.invalid/schemas/sweep.schema.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ServerInfo:
    path: str
    version: str
    backend: str
    # The baseline's command; each result carries the command of its own configuration.
    command: list[str]


@dataclass(frozen=True)
class Failure:
    configuration: str
    kind: str  # "start" (server did not come up), "crashed" (died during a run), "error" (request failed)
    reason: str
    count: int


@dataclass(frozen=True)
class RunCounts:
    planned: int
    ok: int
    failed: int
    not_run: int
    # Runs found in the journal from earlier invocations (--resume) that this report includes.
    resumed: int
    # Journal lines written with other settings (model, n_predict, seed, ...) and left out.
    ignored: int
    damaged_lines: int


@dataclass(frozen=True)
class SweepFiles:
    out_dir: str
    jsonl: str
    report: str
    plot: str | None
    logs: str
    server_logs: dict[str, list[str]]  # configuration id -> the log of each of its server starts


@dataclass
class SweepReport:
    model: str
    tiny_model: bool
    settings: dict[str, Any]
    server: ServerInfo
    results: list[GroupStats]
    recommendation: Recommendation
    break_even: list[BreakEven] | None
    failures: list[Failure]
    runs: RunCounts
    files: SweepFiles
    determinism_note: str = DETERMINISM_NOTE
    prompt_classes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema ``sweep.schema.json``)."""
        results = [_result_dict(group) for group in self.results]
        return {
            "$schema": SCHEMA_ID,
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "tiny_model": self.tiny_model,
            "settings": to_jsonable(self.settings),
            "server": to_jsonable(self.server),
            "prompt_classes": list(self.prompt_classes),
            "results": results,
            "recommendation": to_jsonable(self.recommendation),
            "synthetic": None if self.break_even is None else {"break_even": to_jsonable(self.break_even)},
            "failures": to_jsonable(self.failures),
            "runs": to_jsonable(self.runs),
            "determinism_note": self.determinism_note,
            "files": to_jsonable(self.files),
        }


def _result_dict(group: GroupStats) -> dict[str, Any]:
    data = to_jsonable(group)
    # Failed configurations still have the keys, with nulls, so consumers need no special case.
    if data["tokens_per_second"] is None:
        data["tokens_per_second"] = {"median": None, "min": None, "max": None}
    return data
