"""The sweep report: the typed result of a sweep, which is its JSON document (rendering: mtpinspect/cli/sweep.py).

Through mtpinspect.jsonable the report follows ``mtpinspect/schemas/sweep.schema.json``. People get a summary table (one
row per configuration and prompt class), the per-position acceptance next to what a constant
per-token acceptance would give, the determinism check, the synthetic cost curve when one was
measured, every failure with its one-line reason, and the recommendation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mtpinspect.errors import FormatError
from mtpinspect.files import read_bounded
from mtpinspect.jsonable import schema_header
from mtpinspect.runtime.crash import Crash
from mtpinspect.runtime.workarounds import Workaround
from mtpinspect.sweep.machine_load import MachineLoad
from mtpinspect.sweep.records import TrialRecord
from mtpinspect.sweep.request import RequestWay
from mtpinspect.sweep.statistics import BreakEven, GroupStats, MethodComparison, Recommendation
from mtpinspect.vocabulary import App, Engine

# A report.json larger than this is not one a sweep wrote.
REPORT_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class ServerInfo:
    path: str
    version: str
    backend: str
    # The baseline's command; each result carries the command of its own configuration.
    command: list[str]
    # Where the binary came from (runtime/find.py): "cache" or "built" is the pinned build; "--server" or
    # "$LLAMA_SERVER" one the user named. None for --engine/--endpoint sweeps.
    origin: str | None = None


@dataclass(frozen=True)
class Failure:
    configuration: str
    kind: str  # "start" (server did not come up), "crashed" (died during a run), "error" (request failed)
    reason: str
    count: int


@dataclass(frozen=True)
class EngineCrash:
    """An MTP configuration that crashed the engine: how, and the change that got it running."""

    configuration: str
    crash: Crash  # as first seen
    # The change its later runs used (verified by the search, or reused from an earlier configuration);
    # None when no change worked or --workaround off.
    workaround: Workaround | None
    tried: list[TrialRecord]  # the search's trials, when this configuration's crash started the search


@dataclass(frozen=True)
class RunCounts:
    planned: int
    ok: int
    failed: int
    not_run: int
    # Runs found in the journal from earlier invocations (--resume) that this report includes.
    resumed: int
    # Journal records written with other settings (model, n_predict, seed, ...) or outside this plan
    # (other n-max, prompts or rounds), left out.
    ignored: int
    damaged_lines: int
    # Records of these settings with a field missing or of the wrong type, skipped.
    malformed: int


@dataclass(frozen=True)
class SweepFiles:
    out_dir: str
    jsonl: str
    report: str
    plot: str | None
    logs: str
    server_logs: dict[str, list[str]]  # configuration id -> the log of each of its server starts
    mtp_bench: list[str] = field(default_factory=list)  # --mtp-bench-json: one mtp-bench JSON per configuration


@dataclass(frozen=True)
class AppRecommendation:
    """The recommendation as the app that keeps the model sets it (sweep ollama:..., sweep lmstudio:...)."""

    app: App
    name: str  # the model as the app names it
    setting: str  # PARAMETER draft_num_predict N; "MTP Max Draft Tokens" N
    command: str | None  # Ollama: the Modelfile and `ollama create` that set it


@dataclass(frozen=True)
class EngineRecommendation:
    """The recommendation in the engine's own options (sweep --engine ... --serve, --endpoint)."""

    engine: Engine
    setting: str  # e.g. --speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'
    command: list[str] | None  # --serve: the user's own command with the recommended draft length in it


@dataclass(frozen=True)
class Synthetic:
    """What the --synthetic runs measured: per n-max, speedup against forced acceptance."""

    break_even: list[BreakEven]


@dataclass
class SweepReport:
    json_schema: ClassVar[str] = "sweep"

    model: str
    tiny_model: bool
    settings: dict[str, Any]
    server: ServerInfo
    prompt_classes: list[str]
    results: list[GroupStats]
    recommendation: Recommendation
    synthetic: Synthetic | None  # None without --synthetic
    failures: list[Failure]
    crashes: list[EngineCrash]
    runs: RunCounts
    determinism_note: str
    files: SweepFiles
    # Why the sweep stopped before its plan was done (servers that cannot start); None when it ran it all.
    stopped: str | None = None
    # What other processes used of the CPUs while the runs were measured, with a warning when the speeds may
    # be disturbed; None when no run was measured on a server this machine runs.
    machine_load: MachineLoad | None = None
    app: AppRecommendation | None = None  # the model came from Ollama's store or LM Studio's folder
    engine: EngineRecommendation | None = None  # swept with --engine/--endpoint
    # How the prompts were sent (chat template or raw completion, reasoning) and why; None for engine sweeps.
    request: RequestWay | None = None
    # How rounds and requests were kept independent (sweep/statistics.py independence).
    rounds: str | None = None
    # With more than one --method: each method's best setting per class and condition, and the winner.
    methods: list[MethodComparison] = field(default_factory=list)


@dataclass(frozen=True)
class SavedRecommendation:
    """What a sweep's report.json recommends, read back (check --sweep-report)."""

    path: str
    model: str  # the GGUF that was swept
    n_max: int | None  # None: leave MTP off
    reason: str


def read_recommendation(path: str | Path) -> SavedRecommendation:
    """The recommendation of a sweep report written by `mtpinspect sweep`; FormatError for anything else."""
    file = Path(path).expanduser()
    data = read_bounded(file, REPORT_LIMIT, "sweep report")
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path}: not a sweep report (not valid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("$schema") != schema_header("sweep")["$schema"]:
        raise FormatError(f"{path}: not a sweep report (no \"$schema\": {schema_header('sweep')['$schema']!r})")
    rec, model = doc.get("recommendation"), doc.get("model")
    n_max = rec.get("n_max") if isinstance(rec, dict) else None
    if not isinstance(rec, dict) or not isinstance(model, str) or not isinstance(rec.get("reason"), str) or (
            n_max is not None and (isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 1)):
        raise FormatError(f"{path}: a sweep report without a model and a recommendation (n_max, reason)")
    if rec.get("measured") is False:
        raise FormatError(f"{path}: the sweep measured nothing to recommend from ({rec['reason']})")
    if rec.get("method") not in (None, "draft-mtp"):
        raise FormatError(f"{path}: the sweep recommends {rec['method']}, not an MTP n-max (sweep without --method "
                          "for MTP's)")
    return SavedRecommendation(str(file), model, n_max, rec["reason"])
